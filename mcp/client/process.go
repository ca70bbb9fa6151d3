package client

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/config"
)

// passedEnv lists the variables a stdio server gets from AdaptBot's
// environment: enough to find programs and a home folder, nothing that may
// hold a secret. A server's own "env" adds to them.
var passedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	// Windows needs these to start most programs.
	"SYSTEMROOT", "SYSTEMDRIVE", "COMSPEC", "PATHEXT", "WINDIR", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "TEMP", "TMP",
}

// DefaultEnv returns the environment stdio servers start from: the
// variables of getenv (os.Getenv if nil) that programs need to start, and
// none that may hold a secret.
func DefaultEnv(getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var env []string
	for _, k := range passedEnv {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Grace periods for stopping a stdio server, as the MCP spec describes:
// close its stdin, then SIGTERM, then SIGKILL. The signals go to its whole
// process group.
const (
	stdinGrace   = time.Second
	sigtermGrace = time.Second
)

// groupPoll is how often stop looks whether a server's process group is
// gone: processes other than its own children cannot be waited for.
const groupPoll = 10 * time.Millisecond

// process is a running stdio server.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of its stdin
	stdout *os.File // our end of its stdout
	stderr *tail

	exited  chan struct{} // closed when the process has been waited for
	waitErr error         // set before exited is closed

	stopOnce sync.Once
}

// startProcess starts cfg's command and returns a transport over its
// standard streams. Pipes are made here, not by exec, so that waiting for
// the process never closes a stream the session still reads.
func startProcess(cfg config.Server, base []string) (*process, sdk.Transport, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = append(append([]string(nil), base...), envList(cfg.Env)...)
	cmd.Dir = cfg.Dir
	cmd.Stdin, cmd.Stdout = inR, outW
	p := &process{cmd: cmd, stdin: inW, stdout: outR, stderr: &tail{max: 4096}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.WaitDelay = time.Second // a grandchild holding stderr must not stall Wait
	ownGroup(cmd)
	err = cmd.Start()
	inR.Close() // the child's ends: ours are inW and outR
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, &sdk.IOTransport{Reader: io.NopCloser(outR), Writer: processWriter{p}}, nil
}

// envList turns env into KEY=VALUE pairs, sorted so runs are repeatable.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// processWriter is the session's side of the process's stdin; closing it
// stops the process.
type processWriter struct{ p *process }

// Write sends one message (the SDK writes each in one call). A write that
// fails before a byte of it went out is marked as such, so that the hub may
// send a tool call again that the server never saw.
func (w processWriter) Write(b []byte) (int, error) {
	n, err := w.p.stdin.Write(b)
	if err != nil && n == 0 {
		err = &notSentError{err: err}
	}
	return n, err
}

func (w processWriter) Close() error { w.p.stop(); return nil }

// stop ends the process gracefully if it will, by force if not, and
// releases the pipes. The processes it started go with it: once the command
// has exited (or has not, in time), what is left of its process group gets
// SIGTERM, and SIGKILL if it is still there after a grace period. It is safe
// to call more than once.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		exited := p.waitFor(stdinGrace)
		if !exited || p.groupAlive() {
			p.signalGroup(syscall.SIGTERM)
			if !p.waitGone(sigtermGrace) {
				p.signalGroup(syscall.SIGKILL)
				<-p.exited
			}
		}
		p.stdout.Close()
	})
}

func (p *process) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// waitGone waits at most d for the command to exit and its process group
// to empty.
func (p *process) waitGone(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case <-p.exited:
	case <-deadline.C:
		return false
	}
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for p.groupAlive() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// exitedWithin reports whether the process has exited (waiting at most d
// for it), how, and the last thing it wrote on stderr.
func (p *process) exitedWithin(d time.Duration) (state, said string, exited bool) {
	if !p.waitFor(d) {
		return "", "", false
	}
	state = "exit status 0"
	if p.waitErr != nil {
		state = p.waitErr.Error()
	}
	return state, p.stderr.lastLine(), true
}

// tail keeps the last bytes a process wrote on stderr.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

// lastLine returns the last non-empty line, clipped to 300 bytes.
func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}
