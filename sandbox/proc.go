package sandbox

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
)

// startTimeout bounds a worker's start, up to its hello frame.
const startTimeout = 10 * time.Second

// proc is the server's handle on one worker process. The Pool lends it to
// one call at a time; only that call reads its responses or writes to it.
type proc struct {
	pid   int
	cmd   *exec.Cmd
	reqs  *os.File      // the worker's fd 3, write end
	resps chan response // frames from the worker's fd 4; closed at EOF

	exited     chan struct{} // closed once the process is reaped
	stderrDone chan struct{} // closed once standard error is drained
	state      *os.ProcessState

	fatalMu sync.Mutex
	fatal   string // the first fatal or panic line on standard error

	started time.Time
	has     map[string]bool // tool versions the worker has loaded
	calls   int
	gen     uint64 // the pool's generation (Pool.gen) when it started
	// extra: started beyond the pool's size for nested calls (see Pool);
	// spareTimer stops it once it has waited idle long enough.
	extra      bool
	spareTimer *time.Timer

	conf workerConfinement // what its hello said of its confinement

	readErr error // why the response pipe closed, when not at EOF
}

// absCommand is command with its program as an absolute path: workers
// start in / (startProc), where a relative one would name another file.
func absCommand(command []string) ([]string, error) {
	prog := command[0]
	if !strings.ContainsRune(prog, filepath.Separator) {
		found, err := exec.LookPath(prog)
		if err != nil {
			return nil, fmt.Errorf("sandbox: the worker command %q: %w", prog, err)
		}
		prog = found
	}
	abs, err := filepath.Abs(prog)
	if err != nil {
		return nil, fmt.Errorf("sandbox: the worker command %q: %w", prog, err)
	}
	return append([]string{abs}, command[1:]...), nil
}

// startProc starts a worker and waits for its hello. command[0] is
// absolute (absCommand): the worker starts in /.
func startProc(command, env []string, cfg workerConfig, log *slog.Logger) (*proc, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW, respR, respW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(reqR, reqW, respR, respW, outR, outW)
		return nil, err
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.ExtraFiles = []*os.File{reqR, respW} // fds 3 and 4
	cmd.SysProcAttr = procAttr()
	err = cmd.Start()
	// The child has its copies; the server keeps only its own ends.
	closeAll(reqR, respW, outW, errW)
	if err != nil {
		closeAll(reqW, respR, outR, errR)
		return nil, fmt.Errorf("start worker %s: %w", command[0], err)
	}

	p := &proc{
		pid:        cmd.Process.Pid,
		cmd:        cmd,
		reqs:       reqW,
		resps:      make(chan response, 1),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		started:    time.Now(),
		has:        map[string]bool{},
	}
	wlog := log.With("worker", p.pid)
	go func() {
		stdout := newLineLog(wlog, "sandbox: tool output")
		drain(outR, func(line []byte) { stdout.Write(append(line, '\n')) }) //nolint:errcheck // never fails
		outR.Close()
	}()
	go func() {
		defer close(p.stderrDone)
		stderr := newLineLog(wlog, "sandbox: worker stderr")
		drain(errR, func(line []byte) {
			p.noteFatal(string(line))
			stderr.Write(append(line, '\n')) //nolint:errcheck // never fails
		})
		errR.Close()
	}()
	go func() {
		cmd.Wait() //nolint:errcheck // ProcessState says it all
		p.state = cmd.ProcessState
		reqW.Close()
		close(p.exited)
	}()
	type helloOrErr struct {
		h   workerHello
		err error
	}
	hello := make(chan helloOrErr, 1)
	go func() {
		defer close(p.resps)
		defer respR.Close()
		var h workerHello
		err := readFrame(respR, &h, 1<<20)
		hello <- helloOrErr{h, err}
		if err != nil || h.Error != "" {
			return
		}
		for {
			var r response
			if err := readFrame(respR, &r, maxFrame(cfg.MaxOutput)); err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					p.readErr = err // read after resps closes
				}
				return
			}
			p.resps <- r
		}
	}()

	if err := writeFrame(reqW, cfg); err != nil {
		p.kill()
		return nil, fmt.Errorf("worker did not start: send configuration: %w%s", err, p.fatalSuffix())
	}
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case h := <-hello:
		if h.err != nil {
			p.kill()
			return nil, fmt.Errorf("worker did not start: %w%s", h.err, p.fatalSuffix())
		}
		if h.h.Error != "" {
			p.kill()
			return nil, fmt.Errorf("worker did not start: %s", h.h.Error)
		}
		p.conf = h.h.workerConfinement
	case <-t.C:
		p.kill()
		return nil, fmt.Errorf("worker did not say hello within %v", startTimeout)
	}
	return p, nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// noteFatal keeps the first line on standard error that says why the Go
// runtime is ending the process.
func (p *proc) noteFatal(line string) {
	if !strings.HasPrefix(line, "fatal error: ") && !strings.HasPrefix(line, "panic: ") &&
		!strings.HasPrefix(line, "runtime: out of memory") {
		return
	}
	p.fatalMu.Lock()
	defer p.fatalMu.Unlock()
	if p.fatal == "" {
		p.fatal = clip.String(line, 512)
	}
}

func (p *proc) fatalLine() string {
	p.fatalMu.Lock()
	defer p.fatalMu.Unlock()
	return p.fatal
}

func (p *proc) fatalSuffix() string {
	select {
	case <-p.stderrDone:
	case <-time.After(time.Second):
	}
	if f := p.fatalLine(); f != "" {
		return " (" + f + ")"
	}
	return ""
}

func (p *proc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill ends the process and waits until it is reaped.
func (p *proc) kill() {
	if !p.dead() {
		p.cmd.Process.Kill() //nolint:errcheck // it may have exited meanwhile
	}
	<-p.exited
}

// send writes a request frame.
func (p *proc) send(r request) error {
	return writeFrame(p.reqs, r)
}

// died explains, for tool, why the worker ended without answering: by its
// exit code, or by the Go runtime's last words on standard error. It is
// called once the response pipe has closed.
func (p *proc) died(tool string, cfg workerConfig) *Error {
	select {
	case <-p.exited:
	case <-time.After(time.Second):
		// Alive, but its pipe is closed or garbled: no use any more.
		p.kill()
		msg := "the worker stopped answering"
		if p.readErr != nil {
			msg += ": " + p.readErr.Error()
		}
		return &Error{Tool: tool, Kind: adaptbot.FailCrash, Msg: msg}
	}
	select {
	case <-p.stderrDone:
	case <-time.After(time.Second):
	}
	fatal := p.fatalLine()
	e := &Error{Tool: tool, Kind: adaptbot.FailCrash}
	code := -1
	if p.state != nil {
		code = p.state.ExitCode()
	}
	switch {
	case code == exitTimeout:
		e.Kind, e.Msg = adaptbot.FailTimeout, "ran past its time limit"
	case code == exitLimit:
		e.Kind, e.Msg = adaptbot.FailMemory, "ran past the worker's memory or goroutine limit"
	case strings.HasPrefix(fatal, "panic: "):
		// First, as the panic's value is the tool's to choose.
		e.Msg = "a goroutine panicked, which ends the worker: " + strings.TrimPrefix(fatal, "panic: ")
	case strings.HasPrefix(fatal, "fatal error: ") && strings.Contains(fatal, "out of memory"),
		strings.HasPrefix(fatal, "runtime: out of memory"):
		e.Kind, e.Msg = adaptbot.FailMemory, memoryOutcome(cfg.MemoryLimit).Msg
	case fatal == "fatal error: stack overflow":
		e.Msg = fmt.Sprintf("stack overflow: recursion ran past the %s stack limit", sizeString(maxStack))
	case fatal == "fatal error: thread exhaustion":
		e.Msg = fmt.Sprintf("thread exhaustion: ran past the limit of %d threads", maxThreads)
	case strings.HasPrefix(fatal, "fatal error: "):
		e.Msg = fatal + " (a fatal runtime error ends the worker)"
	case p.state != nil && !p.state.Exited():
		// Killed by a signal nobody here sent: most likely the kernel's
		// out-of-memory killer.
		e.Kind, e.Msg = adaptbot.FailMemory, fmt.Sprintf("the worker was killed (%v), likely for memory", p.state)
	default:
		e.Msg = fmt.Sprintf("the worker exited unexpectedly (%v)", p.state)
	}
	return e
}
