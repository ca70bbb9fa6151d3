package native

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// gateHost stands in for the server's side of a tool's calls outside its
// worker (the toolbox, toolkit.Call): it counts each call by its text, and
// holds the calls whose text is hold until released.
type gateHost struct {
	hold    string
	release chan struct{}
	mu      sync.Mutex
	calls   map[string]int
}

func (h *gateHost) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	var in struct{ Text string }
	if err := json.Unmarshal(args, &in); err != nil || name != "gate" {
		return "", fmt.Errorf("unexpected call %s(%s)", name, args)
	}
	h.mu.Lock()
	h.calls[in.Text]++
	h.mu.Unlock()
	if in.Text == h.hold {
		select {
		case <-h.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "gate saw " + in.Text, nil
}

func (h *gateHost) count(text string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[text]
}

// TestACallNeverRunsTwice: a call in flight on a native pool that is
// dropped meanwhile (another version took its place among the live pools)
// finishes on it, and is never run a second time interpreted: what the
// tool did outside its worker (here, a call through the host) happens once.
func TestACallNeverRunsTwice(t *testing.T) {
	g := goCmd(t)
	dir := t.TempDir()
	relay := Source{Tool: "relay", Code: readTool(t, "testdata/relay/relay.go")}
	calc := Source{Tool: "calculator", Code: readTool(t, "../tools/calculator/calculator.go")}
	preseed(t, dir, relay)
	preseed(t, dir, calc)
	// The held call waits on the host while the calculator is built and
	// proven, which on a loaded machine takes longer than the tests' usual
	// 3 s call limit: its limit must not end it first.
	tier, _ := newTier(t, Options{Go: g, Dir: dir, Pools: 1}, func(o *sandbox.Options) { o.CallTimeout = time.Minute })
	tier.SetExamples(func(tool string, code []byte) []adaptbot.Example {
		if tool == "calculator" {
			return calculatorExamples(tool, code)
		}
		return nil
	})
	host := &gateHost{hold: "once", release: make(chan struct{}), calls: map[string]int{}}
	ctx := toolkit.WithCaller(context.Background(), host)
	run := func(text string) (sandbox.Result, error) {
		return tier.Run(ctx, sandbox.Call{Tool: "relay", Source: relay.Code, Input: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))})
	}

	if _, err := run("first"); err != nil {
		t.Fatal(err)
	}
	waitState(t, tier, "relay", relay.Code, StateNative)

	type outcome struct {
		res sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := run("once")
		done <- outcome{res, err}
	}()
	for host.count("once") == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	// The calculator serves natively: with one live pool, relay's is
	// dropped while its call waits on the host.
	call(t, tier, "calculator", calc.Code, `{"expression":"1 + 1"}`)
	waitState(t, tier, "calculator", calc.Code, StateNative)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n := host.count("once"); n > 1 {
			t.Fatalf("the call ran %d times", n)
		}
	}
	close(host.release)
	got := <-done
	if n := host.count("once"); n != 1 {
		t.Fatalf("the call ran %d times, want once (result %+v, error %v)", n, got.res, got.err)
	}
	if got.err != nil || got.res.Output != "gate saw once" || got.res.Tier != Native {
		t.Fatalf("the call gave %+v, %v; want the gate's answer, natively", got.res, got.err)
	}
}

// TestVersionsAreForgotten: the tier remembers a bounded number of tool
// versions (each edit of a tool is a new one), and a forgotten version
// still runs.
func TestVersionsAreForgotten(t *testing.T) {
	tier, _ := newTier(t, Options{Versions: 3}) // no go: nothing is built
	src := func(i int) []byte {
		return fmt.Appendf(nil, "// Package tiny answers %d.\npackage tiny\n\nimport \"context\"\n\n// Input is nothing.\ntype Input struct{}\n\n// Execute answers.\nfunc Execute(ctx context.Context, in Input) (int, error) { return %d, nil }\n", i, i)
	}
	for i := range 8 {
		if got := call(t, tier, "tiny", src(i), `{}`); got != fmt.Sprint(i) {
			t.Fatalf("version %d answered %s", i, got)
		}
	}
	if n := tier.versionCount(); n > 3 {
		t.Fatalf("the tier remembers %d versions, want at most 3", n)
	}
	if got := call(t, tier, "tiny", src(0), `{}`); got != "0" {
		t.Fatalf("a forgotten version answered %s", got)
	}
}

// TestBuildFailureInWords: a native build that fails shows a person what
// happened and what to do, never the go command's raw output, which goes
// to the log.
func TestBuildFailureInWords(t *testing.T) {
	bin := t.TempDir()
	fake := filepath.Join(bin, "go")
	script := "#!/bin/sh\necho 'go: GOPATH entry is relative; must be absolute path: \"tools/.native/gopath\".' >&2\nexit 2\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tier, _ := newTier(t, Options{Go: fake})
	code := readTool(t, "../tools/calculator/calculator.go")
	call(t, tier, "calculator", code, `{"expression":"1 + 1"}`)
	s := waitState(t, tier, "calculator", code, StateFailed, StateNative)
	if s.State != StateFailed || s.Tier != Interpreted {
		t.Fatalf("status %+v, want interpreted, failed", s)
	}
	for _, raw := range []string{"go:", "GOPATH", "exit status", "go build"} {
		if strings.Contains(s.Reason, raw) {
			t.Errorf("the reason shows the go command's own words (%q): %s", raw, s.Reason)
		}
	}
	if !strings.Contains(s.Reason, "ADAPTBOT_NATIVE=off") || !strings.Contains(s.Reason, "log") {
		t.Errorf("the reason does not say where to look and how to stop it: %s", s.Reason)
	}
}

// TestFoldersAreAbsolute: the go command found through a relative folder
// on PATH, and a relative folder for the tier, become absolute: the go
// command runs in a folder of its own and workers start in /.
func TestFoldersAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("bin", "go"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := Toolchain(func(k string) string { return map[string]string{"PATH": "bin"}[k] })
	if want := filepath.Join(dir, "bin", "go"); got != want {
		t.Errorf("Toolchain = %q, want %q", got, want)
	}
	tier := New(sandbox.NewInProcess(sandbox.Options{}), Options{Dir: "native", Cache: "cache", Log: testLog()})
	defer tier.Close()
	if tier.opts.Dir != filepath.Join(dir, "native") || tier.opts.Cache != filepath.Join(dir, "cache") {
		t.Errorf("the tier's folders are %q and %q, want them absolute", tier.opts.Dir, tier.opts.Cache)
	}
}

// TestCacheTrimmed: the build cache is cut, least recently used first, to
// three quarters of its bound once it passes it.
func TestCacheTrimmed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for i := range 10 {
		p := filepath.Join(dir, fmt.Sprintf("%02x", i), fmt.Sprintf("f%d-d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 1000), 0o600); err != nil {
			t.Fatal(err)
		}
		at := now.Add(time.Duration(i-10) * time.Hour) // f0 the oldest
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	if freed, err := trimCache(dir, 20000); err != nil || freed != 0 {
		t.Fatalf("under the bound: freed %d, %v", freed, err)
	}
	freed, err := trimCache(dir, 8000)
	if err != nil || freed != 4000 {
		t.Fatalf("freed %d bytes (%v), want 4000: down to 6000, three quarters of 8000", freed, err)
	}
	for i := range 10 {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%02x", i), fmt.Sprintf("f%d-d", i)))
		if gone := os.IsNotExist(err); gone != (i < 4) {
			t.Errorf("file %d: gone %v, want the 4 oldest gone", i, gone)
		}
	}
}

// witness is a service outside that counts the requests it gets.
type witness struct {
	mu   sync.Mutex
	sent []string
}

func (w *witness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.sent = append(w.sent, r.URL.String())
	w.mu.Unlock()
	io.WriteString(rw, "pong") //nolint:errcheck
}

func (w *witness) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sent)
}

// TestTheCheckSendsNothing: the native build's differential check never
// sends a request again, not even a GET (a GET may change something too:
// the chaos suite's witness counted one call three times, once for the
// call and twice for the check). A tool that reaches the network is
// checked on the examples that carry their exchanges, answered from them;
// without such an example it stays interpreted, and says why.
func TestTheCheckSendsNothing(t *testing.T) {
	g := goCmd(t)
	src := Source{Tool: "pinger", Code: readTool(t, "testdata/pinger/pinger.go")}
	for _, tc := range []struct {
		name     string
		examples []adaptbot.Example
		want     string
	}{
		{"no exchanges", []adaptbot.Example{{Input: json.RawMessage(`{"text":"a"}`)}}, StateFailed},
		{"with exchanges", []adaptbot.Example{{Input: json.RawMessage(`{"text":"a"}`), HTTP: []adaptbot.Exchange{{
			Request:  adaptbot.ExchangeRequest{Method: "GET", URL: "https://witness.example/ping?text=a"},
			Response: adaptbot.ExchangeResponse{Status: 200, Body: "pong"},
		}}}}, StateNative},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &witness{}
			srv := httptest.NewServer(w)
			t.Cleanup(srv.Close)
			dir := t.TempDir()
			preseed(t, dir, src)
			// The tool's GETs reach the witness, as a real one's would.
			tier, _ := newTier(t, Options{Go: g, Dir: dir}, func(o *sandbox.Options) {
				o.Toolkit = toolkit.Options{Rewrite: map[string]string{"witness.example": srv.URL},
					Policy: toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
			})
			tier.SetExamples(func(string, []byte) []adaptbot.Example { return tc.examples })
			res, err := tier.Run(context.Background(), sandbox.Call{Tool: "pinger", Source: src.Code, Input: json.RawMessage(`{"text":"real"}`)})
			if err != nil || res.Output != "PONG" {
				t.Fatalf("the real call = %+v, %v", res, err)
			}
			s := waitState(t, tier, "pinger", src.Code, StateNative, StateFailed, StateDiffers)
			if s.State != tc.want {
				t.Errorf("state %s (%s), want %s", s.State, s.Reason, tc.want)
			}
			if tc.want == StateFailed && !strings.Contains(s.Reason, "network") {
				t.Errorf("the reason does not say why: %s", s.Reason)
			}
			if n := w.count(); n != 1 {
				t.Errorf("the witness got %d requests (%v), want the real call's alone", n, w.sent)
			}
		})
	}
}
