package sandbox

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"adaptbot/toolkit"
)

// Mode chooses where tools run.
type Mode string

// The modes of New.
const (
	// ModeWorkers runs every call in a supervised worker process: the default,
	// and the only mode that survives a tool that exhausts memory, overflows
	// its stack or trips a fatal runtime error.
	ModeWorkers Mode = "workers"
	// ModeInProcess runs calls in the server's own process: for development
	// and tests. Timeouts, panics and the output cap are enforced, memory and
	// goroutine limits are not, and a fatal error in a tool ends the server.
	ModeInProcess Mode = "inprocess"
)

// Defaults for Options left at zero.
const (
	DefaultCallTimeout   = 10 * time.Second
	DefaultMaxOutput     = 1 << 20
	DefaultMemoryLimit   = 512 << 20
	DefaultMaxGoroutines = 1000
	DefaultQueueTimeout  = 30 * time.Second
	DefaultCacheSize     = 32
)

// Options configures a Runner. The zero value is usable: worker processes,
// one per CPU, with the defaults above.
type Options struct {
	// Mode is ModeWorkers (the default) or ModeInProcess.
	Mode Mode
	// PoolSize is the number of worker processes; 0 means runtime.NumCPU().
	PoolSize int
	// CallTimeout caps every call; a tool's own `const Timeout` and
	// Call.Timeout may only lower it. 0 means DefaultCallTimeout.
	CallTimeout time.Duration
	// MaxOutput caps a result (and an error message) in bytes; 0 means
	// DefaultMaxOutput.
	MaxOutput int
	// MemoryLimit caps a worker's Go memory in bytes (GOMEMLIMIT, a watchdog,
	// and an address-space rlimit with headroom); 0 means DefaultMemoryLimit.
	MemoryLimit int64
	// MaxGoroutines caps the goroutines alive in a worker; 0 means
	// DefaultMaxGoroutines.
	MaxGoroutines int
	// QueueTimeout bounds how long a call waits for a free worker when all
	// are busy; 0 means DefaultQueueTimeout.
	QueueTimeout time.Duration
	// CacheSize bounds the compiled tool versions a worker (or the
	// in-process runner) keeps; 0 means DefaultCacheSize.
	CacheSize int
	// Toolkit configures the HTTP that tools get from package toolkit: the
	// egress policy (ADAPTBOT_EGRESS_ALLOW), the response size and time caps,
	// and, for tests only, host rewrites to a loopback server. Workers
	// receive it over their pipe; tools can neither see nor change it.
	Toolkit toolkit.Options
	// Landlock says whether workers confine themselves with Landlock and,
	// once confined, a seccomp filter (ADAPTBOT_SANDBOX_LANDLOCK):
	// LandlockAuto (the default, "" too) where the kernel allows,
	// LandlockRequire (both, or no worker) or LandlockOff (neither). The
	// in-process runner is never confined, so New refuses it with
	// LandlockRequire.
	Landlock Landlock
	// WorkerCommand is the command that starts a worker: a binary that calls
	// ServeWorker. Empty means this executable with the argument "worker".
	// Workers start in /, so NewPool makes a relative path (or a name found
	// on PATH) absolute first, against the working folder.
	WorkerCommand []string
	// WorkerEnv is added to a worker's otherwise minimal environment. The
	// server's own environment is never passed on: it may hold secrets.
	WorkerEnv []string
	// Log receives worker lifecycle events and what tools print, prefixed
	// and capped. nil means slog.Default().
	Log *slog.Logger

	// watchPaths are the files whose change replaces confined workers; nil
	// means those of their Landlock rules (landlockWatched). Tests set it
	// (WatchFiles), so as not to depend on the host's /etc.
	watchPaths []string
	// watchObserve is told of what the file watch reads (fileWatch.observe);
	// only tests set it (WatchFiles).
	watchObserve watchObserver
}

// watchObserver is told what a file watch reads: an event (read), and
// whether a round of replacements is due.
type watchObserver interface {
	note(read, pending bool)
}

func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeWorkers
	}
	if o.PoolSize <= 0 {
		o.PoolSize = runtime.NumCPU()
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.MaxGoroutines <= 0 {
		o.MaxGoroutines = DefaultMaxGoroutines
	}
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if l, err := ParseLandlock(string(o.Landlock)); err == nil {
		o.Landlock = l // "" is LandlockAuto; NewPool refuses what does not parse
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.watchPaths == nil {
		o.watchPaths = landlockWatched()
	}
	return o
}

// ParseMode reads a mode as written in configuration; "" is ModeWorkers.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeWorkers:
		return ModeWorkers, nil
	case ModeInProcess:
		return ModeInProcess, nil
	}
	return "", fmt.Errorf("sandbox mode %q: use %q or %q", s, ModeWorkers, ModeInProcess)
}

// callTimeout is the limit of one call: the runner's, lowered by the tool's
// own contract Timeout and by the call's.
func callTimeout(def, tool, call time.Duration) time.Duration {
	d := def
	if tool > 0 && tool < d {
		d = tool
	}
	if call > 0 && call < d {
		d = call
	}
	return d
}

func defaultWorkerCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sandbox: find this executable to start workers: %w", err)
	}
	return []string{exe, "worker"}, nil
}
