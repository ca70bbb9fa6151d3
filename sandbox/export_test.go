package sandbox

import (
	"os"
	"sync"
)

// WorkerConfinement is what a worker says of its confinement.
type WorkerConfinement = workerConfinement

// ConfineWorker confines this process as a worker started with Landlock
// setting mode would be: on success it does not return in the calling image,
// which starts over confined; there, called again, it installs the seccomp
// filter and returns the confinement in force. It lets a test bypass the
// interpreter and prove what the kernel alone refuses.
func ConfineWorker(mode Landlock) (WorkerConfinement, error) {
	if _, ok := startedOver(os.Getenv(landlockEnv)); !ok {
		os.Setenv(landlockEnv, string(mode))
	}
	c := confineWorker()
	return c.workerConfinement, c.err
}

// ConfineLandlockOnly confines this process as ConfineWorker does, but
// leaves the seccomp filter out of the image that starts over: a test of what
// Landlock refuses on its own (the filter would refuse running a program
// before Landlock is asked).
func ConfineLandlockOnly(mode Landlock) (WorkerConfinement, error) {
	if _, ok := startedOver(os.Getenv(landlockEnv)); ok {
		return checkConfined(), nil
	}
	os.Setenv(landlockEnv, string(mode))
	c := confineWorker() // returns only if it failed
	return c.workerConfinement, c.err
}

// InstallSeccompFilter puts a worker's seccomp filter on every thread of
// this process, without Landlock: the filter's own test.
func InstallSeccompFilter() error { return installSeccomp() }

// WatchFiles makes a pool built with opts replace its confined workers when
// one of paths changes, in place of the files of their Landlock rules: tests
// change files of their own, not the host's /etc.
func WatchFiles(opts Options, paths ...string) Options {
	opts.watchPaths = paths
	opts.watchObserve = &watchLog{}
	return opts
}

// watchLog is what a test's file watch has read: how many events (whether
// they mattered or not), and whether a round of replacements is due.
type watchLog struct {
	mu      sync.Mutex
	events  int
	pending bool
}

func (w *watchLog) note(read, pending bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if read {
		w.events++
	}
	w.pending = pending
}

func (w *watchLog) state() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, w.pending
}

// WatchState tells a test what p's file watch has done: whether it runs,
// how many events it has read (whether they mattered or not), whether a round
// of replacements is due, and how many rounds there have been.
func WatchState(p *Pool) (watching bool, events int, pending bool, rounds uint64) {
	p.mu.Lock()
	rounds = p.gen
	p.mu.Unlock()
	if p.watch == nil {
		return false, 0, false, rounds
	}
	if w, ok := p.opts.watchObserve.(*watchLog); ok {
		events, pending = w.state()
	}
	return true, events, pending, rounds
}

// Loaded is how many interpreters r has loaded so far.
func (r *InProcess) Loaded() int64 { return r.loaded.Load() }

// TapFrames makes fn see every frame this process writes to a worker and
// reads from one, until the test ends.
func TapFrames(t interface{ Cleanup(func()) }, fn func(frame []byte)) {
	frameTap = fn
	t.Cleanup(func() { frameTap = nil })
}
