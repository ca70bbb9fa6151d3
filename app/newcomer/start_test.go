// Package newcomer holds the tests that start AdaptBot as the README says
// a newcomer does: the built program, in a fresh copy of the repository
// (its tracked files only), with no ADAPTBOT_* setting but the scripted
// model's, and the README's own requests, checked against the answers the
// README shows. They need the go command (to build the program, and for
// the native tier) and git (to list the tracked files); without them they
// skip, and fail under CI=true or ADAPTBOT_REQUIRE_NEWCOMER=1. They
// are a package of their own so that `go test ./...` runs them beside
// app's long test run, not after it.
package newcomer

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// built is the program the tests run, built once for all of them.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// required says the tests must run here, not skip: under CI=true or
// ADAPTBOT_REQUIRE_NEWCOMER=1 (.ci/run).
func required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("ADAPTBOT_REQUIRE_NEWCOMER") == "1"
}

// goCommand is the go command, or skips the test (fails it under CI).
func goCommand(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		if required() {
			t.Fatal("CI=true (or ADAPTBOT_REQUIRE_NEWCOMER=1) but there is no go command: the start-as-documented tests need it")
		}
		t.Skip("no go command: the start-as-documented tests need it")
	}
	return g
}

// adaptbotBinary builds ./app once, as `go run ./app` would, and returns
// the program. It is built from this tree (whose compiled packages the go
// command has cached: about 4 s), not from the copy (about 25 s more here,
// as every package of the module would be compiled again for its new
// folder): the program is the same, and the copy is where it runs.
func adaptbotBinary(t *testing.T, goCmd string) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "adaptbot-documented-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "adaptbot")
		start := time.Now()
		cmd := exec.Command(goCmd, "build", "-o", built.bin, "./app")
		cmd.Dir = "../.."
		out, err := cmd.CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		t.Logf("built the program in %v", time.Since(start).Round(time.Millisecond))
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// freshCopy copies the repository's tracked files (git ls-files), as a
// clone would hold them, into a new folder, and returns it: none of what a
// developer's server left in the tree (tools/.native, the CSV, users).
func freshCopy(t *testing.T) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		if required() {
			t.Fatal("CI=true (or ADAPTBOT_REQUIRE_NEWCOMER=1) but there is no git to list the repository's files")
		}
		t.Skip("no git to list the repository's files")
	}
	out, err := exec.Command(git, "-C", "../..", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join("../..", name)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the tree, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// process is the program running as a newcomer runs it.
type process struct {
	url      string
	cmd      *exec.Cmd
	out, err *syncBuffer
	exited   chan struct{}
}

// newcomerEnv is the environment of a newcomer's shell, as far as AdaptBot
// reads it: PATH (where the go command is), a home of their own, and the
// variables given.
func newcomerEnv(t *testing.T, extra map[string]string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if tmp := os.Getenv("TMPDIR"); tmp != "" {
		env = append(env, "TMPDIR="+tmp)
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// launch starts bin in dir with env and waits until it says it is ready.
// Should the README's port be taken on this machine, it starts it as the
// README says to then, on another port (here: any free one).
func launch(t *testing.T, bin, dir string, env map[string]string) *process {
	t.Helper()
	p := launchOnce(t, bin, dir, env)
	if p.url == "" && strings.Contains(p.err.String(), "the port is already in use") {
		t.Logf("port 3000 is taken on this machine; starting on another port, as the README says:\n%s", p.err)
		retry := map[string]string{"ADAPTBOT_ADDR": "127.0.0.1:0"}
		for k, v := range env {
			retry[k] = v
		}
		p = launchOnce(t, bin, dir, retry)
	}
	if p.url == "" {
		t.Fatalf("AdaptBot did not start\nstdout:\n%s\nstderr:\n%s", p.out, p.err)
	}
	return p
}

func launchOnce(t *testing.T, bin, dir string, env map[string]string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin), out: &syncBuffer{}, err: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = newcomerEnv(t, env)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }() //nolint:errcheck // the output says why
	t.Cleanup(func() { p.stop(t) })
	ready := regexp.MustCompile(`(?m)^ready: open (http://\S+) in a browser$`)
	deadline := time.After(time.Minute)
	for {
		if m := ready.FindStringSubmatch(p.out.String()); m != nil {
			p.url = m[1]
			return p
		}
		select {
		case <-p.exited:
			return p
		case <-deadline:
			return p
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop stops the program as Ctrl-C does, and waits for it.
func (p *process) stop(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGINT) //nolint:errcheck // it may have exited
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill() //nolint:errcheck
		t.Errorf("AdaptBot did not stop within 20 s of Ctrl-C\nstderr:\n%s", p.err)
	}
}

// send sends a request as curl does and decodes a JSON answer.
func (p *process) send(t *testing.T, method, path, body string) (int, map[string]any, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m) //nolint:errcheck // not every answer is JSON
	return resp.StatusCode, m, raw
}

// events sends a request asking for server-sent events, as the chat page's
// Create Tool does, and returns the events' names and data.
func (p *process) events(t *testing.T, path, body string) []string {
	t.Helper()
	req, _ := http.NewRequest("POST", p.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s = %d %s", path, resp.StatusCode, raw)
	}
	var out []string
	for _, frame := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		name, data, _ := strings.Cut(frame, "\n")
		out = append(out, strings.TrimPrefix(name, "event: ")+" "+strings.TrimPrefix(data, "data: "))
	}
	return out
}

// waitFor polls cond every 100 ms until it holds or within is over.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// nativeCache is the native build cache the first test's copy filled, for
// the second to start from: the paths the go command is given are the
// same with a warm cache, and the cold build is measured once.
var nativeCache struct {
	mu  sync.Mutex
	dir string
}

// seedNativeCache copies the build cache kept in nativeCache into home's
// tools/.native/cache, if there is one.
func seedNativeCache(t *testing.T, home string) {
	t.Helper()
	nativeCache.mu.Lock()
	src := nativeCache.dir
	nativeCache.mu.Unlock()
	if src == "" {
		return
	}
	dst := filepath.Join(home, "tools", ".native", "cache")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		return os.Link(p, to)
	})
	if err != nil {
		t.Fatalf("seed the native build cache: %v", err)
	}
}

// keepNativeCache keeps home's native build cache (hard links) for
// seedNativeCache, past the end of the test that owns home.
func keepNativeCache(t *testing.T, home string) {
	t.Helper()
	src := filepath.Join(home, "tools", ".native", "cache")
	dst := filepath.Join(built.dir, "native-cache")
	nativeCache.mu.Lock()
	defer nativeCache.mu.Unlock()
	if nativeCache.dir != "" {
		return
	}
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		return os.Link(p, filepath.Join(dst, rel))
	})
	if err != nil {
		t.Logf("the native build cache is not kept for the next test: %v", err)
		return
	}
	nativeCache.dir = dst
}

// syncBuffer is a buffer a process writes and a test reads at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// csvRows reads the benchmarks CSV at path as an analyst's script would:
// a map by column for each row.
func csvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v (%d records)", path, err, len(recs))
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, col := range recs[0] {
			m[col] = rec[i]
		}
		out = append(out, m)
	}
	return out
}

// str is a decoded JSON value as text: a string as it is, else its JSON.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
