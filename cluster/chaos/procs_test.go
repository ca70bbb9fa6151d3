//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"adaptbot/cluster/clustertest"
)

// build compiles AdaptBot and the NATS server into dir, at once.
func build(t *testing.T, dir string) (adaptbot, natsServer string) {
	t.Helper()
	adaptbot, natsServer = filepath.Join(dir, "adaptbot"), filepath.Join(dir, "nats-server")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, target := range [][2]string{{adaptbot, "adaptbot/app"}, {natsServer, "github.com/nats-io/nats-server/v2"}} {
		wg.Go(func() {
			out, err := exec.Command("go", "build", "-o", target[0], target[1]).CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("go build %s: %v\n%s", target[1], err, out)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return adaptbot, natsServer
}

// proc is one process of the suite, its output in a file of its own.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
}

// lockedBuffer keeps a process's output, for a failure's message and for
// the lines a test waits for.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	f  *os.File
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f.Write(p) //nolint:errcheck // the log file is for people
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProc starts bin with args and env (nothing of the test's own
// environment but PATH), its output appended to logPath.
func startProc(name, bin string, args, env []string, logPath string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "--- %s started %s\n", name, time.Now().Format(time.RFC3339Nano))
	p := &proc{name: name, out: &lockedBuffer{f: f}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		fmt.Fprintf(f, "--- %s ended %s: %v\n", name, time.Now().Format(time.RFC3339Nano), p.err)
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may be gone already
	<-p.done
}

// stop asks the process to end (SIGTERM) and waits up to limit, then
// kills it; it reports whether it ended by itself.
func (p *proc) stop(limit time.Duration) bool {
	p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	select {
	case <-p.done:
		return true
	case <-time.After(limit):
		p.kill()
		return false
	}
}

// waitFor waits until the process's output holds s.
func (p *proc) waitFor(s string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for !strings.Contains(p.out.String(), s) {
		if !p.alive() {
			return fmt.Errorf("%s ended (%v) before saying %q:\n%s", p.name, p.err, s, tail(p.out.String()))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not say %q within %v:\n%s", p.name, s, limit, tail(p.out.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// tail is the end of a process's output, for a failure's message.
func tail(s string) string {
	const n = 6000
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// natsServer is the NATS server process: JetStream on files in its own
// folder, which a restart reads again, and a monitoring port.
type natsServer struct {
	bin, dir, config, logPath string
	port, monitor             int
	p                         *proc
}

func newNATS(t *testing.T, bin, dir string) *natsServer {
	t.Helper()
	n := &natsServer{bin: bin, dir: dir, port: freePort(t), monitor: freePort(t), logPath: filepath.Join(dir, "nats.log")}
	n.config = filepath.Join(dir, "nats.conf")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// As docs/cluster.md asks of NATS: every write fsynced before it is
	// acknowledged.
	conf := fmt.Sprintf(`server_name: chaos
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
}
`, n.port, n.monitor, filepath.Join(dir, "store"))
	if err := os.WriteFile(n.config, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// URL is the server's client URL.
func (n *natsServer) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// Addr is host:port.
func (n *natsServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// start starts the server from its files and waits until JetStream is up.
func (n *natsServer) start() error {
	p, err := startProc("nats", n.bin, []string{"-c", n.config}, nil, n.logPath)
	if err != nil {
		return err
	}
	n.p = p
	deadline := time.Now().Add(60 * time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz?js-enabled-only=true", n.monitor)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if !p.alive() || time.Now().After(deadline) {
			return fmt.Errorf("nats did not start:\n%s", tail(p.out.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replica is one AdaptBot server process, reaching NATS through a proxy of
// its own (so that the suite can cut it off alone).
type replica struct {
	id     string
	dir    string
	port   int
	proxy  *clustertest.Proxy
	env    []string
	bin    string
	p      *proc
	mu     sync.Mutex
	up     bool // serving, as far as the load knows
	starts int
}

// URL is the replica's HTTP address.
func (r *replica) URL() string { return "http://127.0.0.1:" + strconv.Itoa(r.port) }

// start runs the replica and waits for /healthz.
func (r *replica) start() error {
	p, err := startProc(r.id, r.bin, nil, r.env, filepath.Join(r.dir, "server.log"))
	if err != nil {
		return err
	}
	r.p = p
	if err := p.waitFor("AdaptBot is listening on", 2*time.Minute); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get(r.URL() + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer /healthz", r.id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.mu.Lock()
	r.up, r.starts = true, r.starts+1
	r.mu.Unlock()
	return nil
}

func (r *replica) isUp() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.up
}

// down marks the replica out of the load, as a load balancer's health
// check would.
func (r *replica) down() {
	r.mu.Lock()
	r.up = false
	r.mu.Unlock()
}

// kill takes the replica out of the load and SIGKILLs it.
func (r *replica) kill() {
	r.down()
	r.p.kill()
}

// worker is one `adaptbot worker` fleet process.
type worker struct {
	id, bin, logPath string
	env, args        []string
	p                *proc
}

func (w *worker) start() error {
	p, err := startProc(w.id, w.bin, w.args, w.env, w.logPath)
	if err != nil {
		return err
	}
	w.p = p
	return p.waitFor("fleet worker "+w.id, time.Minute)
}

// openFDs counts a process's open files.
func openFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// copyDir copies the shipped tools' sources (not their tests) from src to
// dst/NAME/NAME.go.
func copyTools(src, dst string) error {
	srcs, err := filepath.Glob(filepath.Join(src, "*", "*.go"))
	if err != nil {
		return err
	}
	for _, path := range srcs {
		name := filepath.Base(filepath.Dir(path))
		if filepath.Base(path) != name+".go" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := writeTool(dst, name, b); err != nil {
			return err
		}
	}
	return nil
}

// writeTool writes a tool's source as an editor does (a temporary file
// renamed), so a replica's file watch never sees half of it.
func writeTool(toolsDir, name string, src []byte) error {
	if err := os.MkdirAll(filepath.Join(toolsDir, name), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(toolsDir, name, "."+name+".tmp")
	if err := os.WriteFile(tmp, src, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(toolsDir, name, name+".go"))
}

// getJSON is a GET whose answer is decoded into v (nil: not decoded).
func getJSON(ctx context.Context, url string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if v != nil && resp.StatusCode == 200 {
		if err := jsonUnmarshal(b, v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %w: %s", url, err, b)
		}
	}
	return resp.StatusCode, nil
}
