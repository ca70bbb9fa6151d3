package sandbox_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// requireLandlockEnv turns the skips of a kernel without Landlock into
// failures: CI sets it, so that confinement cannot quietly go untested.
const requireLandlockEnv = "ADAPTBOT_REQUIRE_LANDLOCK"

// landlockABI returns the kernel's Landlock ABI version, or skips the test
// (fails it under ADAPTBOT_REQUIRE_LANDLOCK=1) where there is none.
func landlockABI(t *testing.T) int {
	t.Helper()
	abi, err := sandbox.LandlockABI()
	if err != nil {
		if os.Getenv(requireLandlockEnv) == "1" {
			t.Fatalf("%s=1, but %v", requireLandlockEnv, err)
		}
		t.Skipf("no Landlock here: %v", err)
	}
	return abi
}

// probeEnv names the folder the probe child tries to read and write.
const probeEnv = "ADAPTBOT_LANDLOCK_PROBE_DIR"

// probeReport is what the probe child prints: the ABI it is confined with
// and the outcome of each attempt.
type probeReport struct {
	ABI      int                    `json:"abi"`
	Results  map[string]probeResult `json:"results"`
	Unlocked int                    `json:"unlocked"` // threads that could read /etc/passwd
	Roots    int                    `json:"roots"`    // TLS roots loaded
}

type probeResult struct {
	Err   string `json:"err,omitempty"`
	Errno int    `json:"errno,omitempty"` // the system error, if that is what it was
}

func result(err error) probeResult {
	if err == nil {
		return probeResult{}
	}
	r := probeResult{Err: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.Errno = int(errno)
	}
	return r
}

// landlockProbe is the test binary started by TestLandlockConfinesFiles: it
// confines itself as a worker does (the process starts over, confined), but
// for the seccomp filter (TestSeccompFilter's), then, with no interpreter in
// the way, tries what a tool that escaped its allowlist might, and prints the
// outcomes.
func landlockProbe() {
	conf, err := sandbox.ConfineLandlockOnly(sandbox.LandlockRequire)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir := os.Getenv(probeEnv)
	read := func(path string) probeResult {
		_, err := os.ReadFile(path)
		return result(err)
	}
	res := map[string]probeResult{
		"read private file":   read(filepath.Join(dir, "secret")),
		"write private file":  result(os.WriteFile(filepath.Join(dir, "new"), []byte("x"), 0o600)),
		"overwrite file":      result(os.WriteFile(filepath.Join(dir, "secret"), []byte("x"), 0o600)),
		"make folder":         result(os.Mkdir(filepath.Join(dir, "sub"), 0o700)),
		"read /etc/passwd":    read("/etc/passwd"),
		"list /":              result(func() error { _, err := os.ReadDir("/"); return err }()),
		"read server environ": read(fmt.Sprintf("/proc/%d/environ", os.Getppid())),
		"read own environ":    read("/proc/self/environ"),
		"run /bin/sh": result(func() error {
			// Pipes, not /dev/null (which it may not write), so that the
			// exec itself is what is refused.
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), io.Discard, io.Discard
			return cmd.Run()
		}()),
		"read resolv.conf": read("/etc/resolv.conf"),
		"read hosts":       read("/etc/hosts"),
		"read zoneinfo":    read("/usr/share/zoneinfo/Europe/Paris"),
		"read /dev/urandom": result(func() error {
			f, err := os.Open("/dev/urandom")
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Read(make([]byte, 16))
			return err
		}()),
		"load Europe/Paris":  result(func() error { _, err := time.LoadLocation("Europe/Paris"); return err }()),
		"resolve localhost":  result(func() error { _, err := net.DefaultResolver.LookupHost(context.Background(), "localhost"); return err }()),
		"signal the server":  result(syscall.Kill(os.Getppid(), 0)),
		"signal itself":      result(syscall.Kill(os.Getpid(), 0)),
		"read /etc/ssl/priv": result(func() error { _, err := os.ReadDir("/etc/ssl/private"); return err }()),
	}
	rep := probeReport{ABI: conf.Landlock, Results: res}
	if pool, err := x509.SystemCertPool(); err == nil {
		//lint:ignore SA1019 on Linux the system pool is a plain pool, so Subjects lists its roots
		rep.Roots = len(pool.Subjects())
	}
	// Every thread, not only the one that asked, must be confined: lock
	// goroutines to threads, old and new, and try from each.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 8*runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if _, err := os.ReadFile("/etc/passwd"); err == nil {
				mu.Lock()
				rep.Unlocked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	json.NewEncoder(os.Stdout).Encode(rep) //nolint:errcheck
	os.Exit(0)
}

// TestLandlockConfinesFiles proves Landlock on its own: a child process
// confines itself as a worker does, without the seccomp filter, and, past any
// interpreter, is refused every file but the read-only few Go needs, on
// every thread.
func TestLandlockConfinesFiles(t *testing.T) {
	abi := landlockABI(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{workerEnvVar + "=landlock-probe", probeEnv + "=" + dir, "GORACE=atexit_sleep_ms=0"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, stderr.Bytes())
	}
	var rep probeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("probe said %q: %v\n%s", out, err, stderr.Bytes())
	}
	if rep.ABI != abi {
		t.Errorf("confined with ABI %d, the kernel has %d", rep.ABI, abi)
	}

	denied := []string{"read private file", "write private file", "overwrite file", "make folder",
		"read /etc/passwd", "list /", "read server environ", "read own environ", "run /bin/sh"}
	if _, err := os.Stat("/etc/ssl/private"); err == nil {
		denied = append(denied, "read /etc/ssl/priv")
	}
	for _, name := range denied {
		if r := rep.Results[name]; r.Errno != int(syscall.EACCES) {
			t.Errorf("%s: %+v, want EACCES", name, r)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "secret")); err != nil || string(b) != "s3cret" {
		t.Errorf("the private file is now %q, %v", b, err)
	}
	if rep.Unlocked != 0 {
		t.Errorf("%d threads of the confined process could read /etc/passwd", rep.Unlocked)
	}
	if abi >= 6 {
		// Scoped: no signals to processes outside the worker.
		if r := rep.Results["signal the server"]; r.Errno != int(syscall.EPERM) {
			t.Errorf("signal the server: %+v, want EPERM", r)
		}
	}

	allowed := []string{"read /dev/urandom", "load Europe/Paris", "signal itself"}
	for path, name := range map[string]string{
		"/etc/resolv.conf": "read resolv.conf", "/etc/hosts": "read hosts",
		"/usr/share/zoneinfo/Europe/Paris": "read zoneinfo",
	} {
		if _, err := os.Stat(path); err == nil {
			allowed = append(allowed, name)
		}
	}
	if _, err := net.DefaultResolver.LookupHost(context.Background(), "localhost"); err == nil {
		allowed = append(allowed, "resolve localhost")
	}
	for _, name := range allowed {
		if r := rep.Results[name]; r.Err != "" {
			t.Errorf("%s: %s, want success", name, r.Err)
		}
	}
	if pool, err := x509.SystemCertPool(); err == nil {
		//lint:ignore SA1019 as above: on Linux Subjects lists the system roots
		if want := len(pool.Subjects()); rep.Roots != want {
			t.Errorf("confined, %d TLS roots load; unconfined, %d", rep.Roots, want)
		}
	}
	t.Logf("ABI %d; %d TLS roots; results: %+v", rep.ABI, rep.Roots, rep.Results)
}

// fetcher returns what toolkit.Get says of its URL: the body, or the error.
const fetcher = `// Package fetcher gets a URL.
package fetcher

import (
	"context"

	"adaptbot/toolkit"
)

type Input struct {
	URL string ` + "`json:\"url\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	body, err := toolkit.Get(ctx, in.URL)
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return body, nil
}
`

// TestLandlockPoolWorkers runs tools through a real pool of confined
// workers: HTTP through the toolkit by host name and over TLS (sent by the
// server for the confined worker since issue 37: the worker sends nothing
// itself), and time zones (the shipped current_time tool).
func TestLandlockPoolWorkers(t *testing.T) {
	abi := landlockABI(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from loopback") }))
	defer srv.Close()
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secure") }))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	tlsSrv.StartTLS()
	defer tlsSrv.Close()

	opts := testOptions(t)
	opts.Landlock = sandbox.LandlockRequire
	want := fmt.Sprintf("Landlock ABI %d, seccomp", abi)
	if err := sandbox.SeccompSupport(); err != nil {
		// Landlock alone, which require would refuse.
		opts.Landlock = sandbox.LandlockAuto
		want = fmt.Sprintf("Landlock ABI %d, no seccomp filter: %v", abi, err)
	}
	opts.Toolkit.Policy = toolkit.Policy{
		AllowHosts: []string{"localhost"},
		AllowNets:  []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	}
	p := newPool(t, opts)
	s := p.Stats()
	if !s.Confined || s.Confinement != want {
		t.Fatalf("stats: confined %v, %q; want %q", s.Confined, s.Confinement, want)
	}
	for _, pid := range s.PIDs {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(status), "NoNewPrivs:\t1") {
			t.Errorf("worker %d has no_new_privs off", pid)
		}
	}

	port := srv.Listener.Addr().(*net.TCPAddr).Port
	if _, err := net.DefaultResolver.LookupHost(context.Background(), "localhost"); err == nil {
		res, err := run(t, p, "fetcher", fetcher, fmt.Sprintf(`{"url":"http://localhost:%d/"}`, port))
		if err != nil || res.Output != "hello from loopback" {
			t.Errorf("HTTP by host name from a confined worker: %q, %v", res.Output, err)
		}
	}
	if _, err := x509.SystemCertPool(); err == nil {
		// The test server's certificate is its own, so the handshake fails;
		// but on the roots, not for want of any.
		res, err := run(t, p, "fetcher", fetcher, fmt.Sprintf(`{"url":%q}`, tlsSrv.URL))
		if err != nil || !strings.Contains(res.Output, "certificate signed by unknown authority") {
			t.Errorf("HTTPS from a confined worker: %q, %v; want the roots loaded and the test certificate refused", res.Output, err)
		}
	}
	src, err := os.ReadFile("../tools/current_time/current_time.go")
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(t, p, "current_time", string(src), `{"timezone":"Europe/Paris"}`)
	if err != nil || !strings.Contains(res.Output, `"timezone":"Europe/Paris"`) {
		t.Errorf("current_time in a confined worker: %q, %v", res.Output, err)
	}
}

// TestLandlockSettings: off is reported as such (no Landlock, no seccomp),
// require refuses a worker that does not say it is confined, and the
// in-process runner cannot be required to be confined.
func TestLandlockSettings(t *testing.T) {
	opts := testOptions(t)
	opts.PoolSize = 1
	opts.Landlock = sandbox.LandlockOff
	s := newPool(t, opts).Stats()
	if s.Confined || s.Seccomp || s.Confinement != "not confined: Landlock is off" {
		t.Errorf("off: confined %v, seccomp %v, %q", s.Confined, s.Seccomp, s.Confinement)
	}

	if _, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess, Landlock: sandbox.LandlockRequire}); err == nil {
		t.Error("an in-process runner was created with Landlock required")
	}
	for in, want := range map[string]sandbox.Landlock{"": sandbox.LandlockAuto, "Require": sandbox.LandlockRequire, " off ": sandbox.LandlockOff} {
		if got, err := sandbox.ParseLandlock(in); err != nil || got != want {
			t.Errorf("ParseLandlock(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := sandbox.ParseLandlock("yes"); err == nil {
		t.Error("ParseLandlock accepted yes")
	}

	// A worker that will not serve says why in place of its hello.
	opts.Landlock = sandbox.LandlockAuto
	opts.WorkerEnv = append(opts.WorkerEnv, "ADAPTBOT_WORKER_LANDLOCK=sometimes")
	if _, err := sandbox.NewPool(opts); err == nil || !strings.Contains(err.Error(), `did not start: sandbox worker: ADAPTBOT_WORKER_LANDLOCK: landlock "sometimes"`) {
		t.Errorf("a worker given a bad Landlock setting: %v", err)
	}
	opts.WorkerEnv = opts.WorkerEnv[:len(opts.WorkerEnv)-1]

	opts.Landlock = sandbox.LandlockRequire
	if _, err := sandbox.LandlockABI(); err != nil {
		_, err := sandbox.NewPool(opts)
		if err == nil || !strings.Contains(err.Error(), "Landlock is required") {
			t.Errorf("require on a kernel without Landlock: %v", err)
		}
		return
	}
	// A worker that knows nothing of Landlock says hello without it.
	opts.WorkerEnv = []string{workerEnvVar + "=die-after-hello"}
	_, err := sandbox.NewPool(opts)
	if err == nil || !strings.Contains(err.Error(), "not confined") {
		t.Errorf("require with a worker that does not confine itself: %v", err)
	}
}
