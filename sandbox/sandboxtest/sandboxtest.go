// Package sandboxtest lends the sandbox's hostile-tool corpus to tests
// elsewhere (the server's end-to-end test runs it through the real server):
// each case is a tool in sandbox/testdata/hostile/<case>/<case>.go, and
// cases.json beside them says what each must get. It is for tests only.
//
// A test binary that runs the corpus through worker processes must be able
// to serve as a worker itself, and should use small limits to stay quick:
//
//	func TestMain(m *testing.M) {
//		if os.Getenv("MY_TEST_WORKER") == "1" {
//			if err := sandbox.ServeWorker(); err != nil {
//				os.Exit(1)
//			}
//			os.Exit(0)
//		}
//		os.Exit(m.Run())
//	}
//
//	exe, _ := os.Executable()
//	toolkitOpts, stop, err := sandboxtest.Redirector() // skip NeedsRedirector if err != nil
//	opts := sandbox.Options{
//		PoolSize: 2, CallTimeout: 20 * time.Second, MemoryLimit: 256 << 20, MaxGoroutines: 200,
//		WorkerCommand: []string{exe}, WorkerEnv: []string{"MY_TEST_WORKER=1"},
//		Toolkit: toolkitOpts,
//	}
//
// and give the cases of Kind adaptbot.FailTimeout a one-second Call.Timeout.
package sandboxtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// NeedsRedirector marks the case that fetches http://redirector.test/, which
// must be rewritten to the server Redirector starts.
const NeedsRedirector = "redirector"

// Case is one hostile tool and the outcome it must get.
type Case struct {
	// Name is the case, the tool's name and its folder.
	Name string `json:"case"`
	// Kind is the error kind the call must fail with; "" means it succeeds.
	Kind adaptbot.Failure `json:"kind"`
	// Message must appear in the error.
	Message string `json:"message"`
	// Output is the result of a call that succeeds.
	Output string `json:"output"`
	// Recycles says the worker must be replaced after the call (it was
	// left with the tool's goroutines).
	Recycles bool `json:"recycles"`
	// Needs names a fixture the case depends on: NeedsRedirector.
	Needs string `json:"needs"`
	// InProcess says the in-process runner survives the case too, with
	// the same outcome. The others (memory, stack, fatal errors, goroutine
	// limits and leaks) need worker processes.
	InProcess bool `json:"in_process"`
	// Source is the tool's source.
	Source []byte `json:"-"`
}

// Dir returns the corpus folder.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "hostile")
}

// Corpus reads every case with its source.
func Corpus() ([]Case, error) {
	dir := Dir()
	raw, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		return nil, err
	}
	var cases []Case
	if err := json.Unmarshal(raw, &cases); err != nil {
		return nil, fmt.Errorf("cases.json: %w", err)
	}
	for i := range cases {
		c := &cases[i]
		if c.Source, err = os.ReadFile(filepath.Join(dir, c.Name, c.Name+".go")); err != nil {
			return nil, err
		}
	}
	return cases, nil
}

// Check reports how a call's outcome differs from what c must get, or nil.
func (c Case) Check(res sandbox.Result, err error) error {
	if c.Kind == "" {
		if err != nil {
			return fmt.Errorf("%s: want success, got %v", c.Name, err)
		}
		if res.Output != c.Output {
			return fmt.Errorf("%s: output %q, want %q", c.Name, res.Output, c.Output)
		}
		return nil
	}
	if err == nil {
		return fmt.Errorf("%s: want a %s error, got success (%.80q)", c.Name, c.Kind, res.Output)
	}
	if got := adaptbot.FailureOf(err); got != c.Kind {
		return fmt.Errorf("%s: kind %q, want %q (%v)", c.Name, got, c.Kind, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, c.Message) {
		return fmt.Errorf("%s: error %q does not say %q", c.Name, msg, c.Message)
	}
	if !strings.Contains(msg, "tool "+c.Name) {
		return fmt.Errorf("%s: error %q does not name the tool", c.Name, msg)
	}
	return nil
}

// Redirector serves, on a loopback address, a redirect to a private address
// (10.0.0.1, which the egress policy refuses before any packet is sent). It
// returns toolkit options that allow that loopback address alone and route
// redirector.test to it, and a function that stops the server. It listens
// on 127.0.0.2 so that 127.0.0.1 stays refused; where that address is not
// available it returns an error, and the case should be skipped.
func Redirector() (toolkit.Options, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		return toolkit.Options{}, nil, fmt.Errorf("listen on 127.0.0.2: %w", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://10.0.0.1/secret", http.StatusFound)
	})}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	addr := ln.Addr().(*net.TCPAddr)
	ip, ok := netip.AddrFromSlice(addr.IP)
	if !ok {
		srv.Close()
		return toolkit.Options{}, nil, errors.New("redirector: bad listen address")
	}
	opts := toolkit.Options{
		Policy:  toolkit.Policy{AllowNets: []netip.Prefix{netip.PrefixFrom(ip.Unmap(), 32)}},
		Rewrite: map[string]string{"redirector.test": "http://" + addr.String()},
	}
	return opts, func() { srv.Close() }, nil
}

// ServeWorkerIf makes a test binary a sandbox worker when the environment
// variable env is "1": the pools of a package's tests start their own test
// binary with env set, so tools run as in a server, in a process of their
// own. It serves and exits; otherwise it returns at once. Call it first in
// TestMain.
func ServeWorkerIf(env string) {
	if os.Getenv(env) != "1" {
		return
	}
	if err := sandbox.ServeWorker(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
