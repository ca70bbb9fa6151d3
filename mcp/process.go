package mcp

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
// close its stdin, then SIGTERM, then SIGKILL.
const (
	stdinGrace   = time.Second
	sigtermGrace = time.Second
)

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
func startProcess(cfg ServerConfig, base []string) (*process, sdk.Transport, error) {
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

func (w processWriter) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }

func (w processWriter) Close() error { w.p.stop(); return nil }

// stop ends the process gracefully if it will, by force if not, and
// releases the pipes. It is safe to call more than once.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !p.waitFor(stdinGrace) {
			p.cmd.Process.Signal(syscall.SIGTERM)
			if !p.waitFor(sigtermGrace) {
				p.cmd.Process.Kill()
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
