package native

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
)

// nativeTools are the tools the shared native worker program serves, by
// name: the benchmarks' and the differential check's.
func nativeTools(t testing.TB) []Source {
	var out []Source
	for _, name := range []string{"fib", "primes", "whoami", "relay", "hook"} {
		out = append(out, Source{Tool: name, Code: readTool(t, filepath.Join("testdata", name, name+".go"))})
	}
	out = append(out, Source{Tool: "calculator", Code: readTool(t, "../tools/calculator/calculator.go")})
	return append(out, corpusSources(t)...)
}

func newTier(t *testing.T, opts Options) (*Tier, sandbox.Runner) {
	t.Helper()
	so := sandboxOptions(t)
	interp, err := sandbox.NewPool(so)
	if err != nil {
		t.Fatal(err)
	}
	opts.Sandbox = so
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Cache == "" {
		opts.Cache = testCache(t)
	}
	n := new(atomic.Int64)
	tier := New(interp, countBuilds(opts, n))
	compileCounts.Store(tier, n)
	t.Cleanup(func() { tier.Close() })
	return tier, interp
}

// preseed puts the shared native worker program in the tier's folder as the
// binary of src's digest, as a build would have left it.
func preseed(t *testing.T, dir string, src Source) {
	t.Helper()
	bin := sharedBinary(t, nativeTools(t)...)
	if err := os.MkdirAll(filepath.Join(dir, "bin", runtimeID()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(bin, filepath.Join(dir, "bin", runtimeID(), src.Digest())); err != nil {
		t.Fatal(err)
	}
}

// waitState waits for the version to reach one of the states.
func waitState(t *testing.T, tier *Tier, tool string, code []byte, states ...string) Status {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		s := tier.Status(tool, code)
		for _, want := range states {
			if s.State == want {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool %s is %+v, want one of %v", tool, s, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func call(t *testing.T, r sandbox.Runner, tool string, code []byte, input string) string {
	t.Helper()
	return result(t, r, tool, code, input).Output
}

func result(t *testing.T, r sandbox.Runner, tool string, code []byte, input string) sandbox.Result {
	t.Helper()
	res, err := r.Run(context.Background(), sandbox.Call{Tool: tool, Source: code, Input: json.RawMessage(input)})
	if err != nil {
		t.Fatalf("%s(%s): %v", tool, input, err)
	}
	return res
}

func calculatorExamples(tool string, code []byte) Sample {
	return inputs(`{"expression":"(2 + 3) * sqrt(16) / 2^3"}`, `{"expression":"1/0"}`)
}

// inputs is a sample of examples with these inputs, of a tool that does
// not act.
func inputs(in ...string) Sample {
	var s Sample
	for _, x := range in {
		s.Examples = append(s.Examples, Probe{Input: json.RawMessage(x)})
	}
	return s
}

// TestServesNativelyOnceProven follows a tool from its first call to the
// native tier, through a change made while its native build runs, and back:
// the first call runs interpreted and starts the build; the new version
// never runs the old binary; each version serves natively once its own
// build gives the interpreter's results; and a tier started again on the
// same folder finds the binaries without compiling, while one of another
// AdaptBot (another worker runtime) builds its own.
func TestServesNativelyOnceProven(t *testing.T) {
	g := goCmd(t)
	dir := t.TempDir()
	tier, _ := newTier(t, Options{Go: g, Dir: dir})
	tier.SetExamples(calculatorExamples)
	v1 := readTool(t, "../tools/calculator/calculator.go")
	v2 := []byte(strings.Replace(string(v1), `" = " + format(v)`, `" => " + format(v)`, 1))
	if string(v1) == string(v2) {
		t.Fatal("the calculator no longer writes its answer as expected; change this test")
	}
	if s := tier.Status("calculator", v1); s.Tier != Interpreted || s.State != StateWaiting {
		t.Fatalf("before any call: %+v", s)
	}

	// The result says which tier ran each call: the row and the span take it.
	if got := result(t, tier, "calculator", v1, `{"expression":"17 * 23 + 4"}`); got.Output != "17 * 23 + 4 = 395" || got.Tier != Interpreted {
		t.Fatalf("v1: %q on tier %q, want interpreted", got.Output, got.Tier)
	}
	// The tool changes while v1 builds (or waits to): v2 runs interpreted,
	// with its own answer, whatever v1's build does meanwhile.
	waitState(t, tier, "calculator", v1, StateBuilding, StateChecking, StateNative)
	for !isNative(tier, "calculator", v1) {
		if got := call(t, tier, "calculator", v2, `{"expression":"17 * 23 + 4"}`); got != "17 * 23 + 4 => 395" {
			t.Fatalf("v2 during v1's build: %q", got)
		}
		if s := tier.Status("calculator", v1); s.State == StateFailed || s.State == StateDiffers {
			t.Fatalf("v1: %+v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := result(t, tier, "calculator", v1, `{"expression":"17 * 23 + 4"}`); got.Output != "17 * 23 + 4 = 395" || got.Tier != Native {
		t.Fatalf("v1 native: %q on tier %q", got.Output, got.Tier)
	}
	if s := tier.Status("calculator", v2); s.Tier != Interpreted {
		t.Fatalf("v2 serves natively before its own build: %+v", s)
	}
	for !isNative(tier, "calculator", v2) {
		if got := call(t, tier, "calculator", v2, `{"expression":"17 * 23 + 4"}`); got != "17 * 23 + 4 => 395" {
			t.Fatalf("v2 during its build: %q", got)
		}
		if s := tier.Status("calculator", v2); s.State == StateFailed || s.State == StateDiffers {
			t.Fatalf("v2: %+v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := call(t, tier, "calculator", v2, `{"expression":"17 * 23 + 4"}`); got != "17 * 23 + 4 => 395" {
		t.Fatalf("v2 native: %q", got)
	}
	if n := builds(tier); n != 2 {
		t.Errorf("%d builds, want 2", n)
	}

	// A server started again (or rolled back to v1) finds v1's binary.
	tier.Close()
	again, _ := newTier(t, Options{Go: g, Dir: dir})
	again.SetExamples(calculatorExamples)
	call(t, again, "calculator", v1, `{"expression":"1 + 1"}`)
	waitState(t, again, "calculator", v1, StateNative)
	if n := builds(again); n != 0 {
		t.Errorf("the rollback compiled %d times, want 0: its binary is kept", n)
	}

	// The binaries another AdaptBot built (its worker side, its protocol,
	// its failure words) are never run, and go at the first build.
	again.Close()
	bins := filepath.Join(dir, "bin")
	if err := os.Rename(filepath.Join(bins, runtimeID()), filepath.Join(bins, "0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	upgraded, _ := newTier(t, Options{Go: g, Dir: dir})
	upgraded.SetExamples(calculatorExamples)
	call(t, upgraded, "calculator", v1, `{"expression":"1 + 1"}`)
	waitState(t, upgraded, "calculator", v1, StateNative)
	if n := builds(upgraded); n != 1 {
		t.Errorf("after an upgrade v1 was compiled %d times, want 1: the old binary is another runtime's", n)
	}
	if _, err := os.Stat(filepath.Join(bins, "0123456789abcdef")); !os.IsNotExist(err) {
		t.Errorf("the other runtime's binaries are still there: %v", err)
	}
}

func isNative(tier *Tier, tool string, code []byte) bool {
	return tier.Status(tool, code).State == StateNative
}

// TestDiffersNeverServesNatively: a tool whose native build answers an
// example otherwise than the interpreter stays interpreted, and the
// difference is recorded, saying why.
func TestDiffersNeverServesNatively(t *testing.T) {
	g := goCmd(t)
	dir := t.TempDir()
	src := Source{Tool: "whoami", Code: readTool(t, "testdata/whoami/whoami.go")}
	preseed(t, dir, src)
	tier, _ := newTier(t, Options{Go: g, Dir: dir})
	tier.SetExamples(func(string, []byte) Sample { return inputs(`{"text":"example"}`) })
	var mu sync.Mutex
	var got []Mismatch
	tier.OnMismatch(func(m Mismatch) { mu.Lock(); got = append(got, m); mu.Unlock() })

	interpreted := call(t, tier, "whoami", src.Code, `{"text":"hi"}`)
	s := waitState(t, tier, "whoami", src.Code, StateDiffers, StateNative, StateFailed)
	if s.State != StateDiffers || s.Tier != Interpreted {
		t.Fatalf("status %+v, want interpreted, differs", s)
	}
	if !strings.Contains(s.Reason, "whoami.Input") || !strings.Contains(s.Reason, "struct {") {
		t.Errorf("the reason does not show both answers: %s", s.Reason)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].Tool != "whoami" || got[0].Digest != src.Digest() || string(got[0].Input) != `{"text":"example"}` {
		t.Fatalf("mismatches recorded: %+v", got)
	}
	for i := 0; i < 3; i++ {
		if out := call(t, tier, "whoami", src.Code, `{"text":"hi"}`); out != interpreted {
			t.Fatalf("call %d: %q, want the interpreter's %q", i, out, interpreted)
		}
	}
	if n := builds(tier); n != 0 {
		t.Errorf("compiled %d times; the binary was there", n)
	}
}

// TestOffAndNoToolchainChangeNothing: with ADAPTBOT_NATIVE=off, or no go
// on the machine, tools run interpreted as before, nothing is built, and
// the status says why.
func TestOffAndNoToolchainChangeNothing(t *testing.T) {
	code := readTool(t, "../tools/calculator/calculator.go")
	noGo := Toolchain(func(k string) string {
		if k == "PATH" {
			return "/nonexistent:" + t.TempDir()
		}
		return ""
	})
	if noGo != "" {
		t.Fatalf("found go at %s on an empty PATH", noGo)
	}
	for name, opts := range map[string]Options{
		"off":   {Mode: ModeOff, Go: Toolchain(os.Getenv)},
		"no go": {Go: noGo},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			opts.Dir = dir
			tier, interp := newTier(t, opts)
			for i := 0; i < 3; i++ {
				if got, want := call(t, tier, "calculator", code, `{"expression":"2*21"}`), call(t, interp, "calculator", code, `{"expression":"2*21"}`); got != want {
					t.Fatalf("%q, want the interpreter's %q", got, want)
				}
			}
			s := tier.Status("calculator", code)
			want := map[string]string{"off": StateOff, "no go": StateNoGo}[name]
			if s.Tier != Interpreted || s.State != want || s.Reason == "" {
				t.Fatalf("status %+v, want interpreted, %s, with a reason", s, want)
			}
			tier.Close() // waits for any build
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the tier wrote %d entries in its folder", len(entries))
			}
			if n := builds(tier); n != 0 {
				t.Errorf("compiled %d times", n)
			}
		})
	}
}

// TestNeverServedNeverBuilt: a version is compiled only once it has
// served: a tool whose every call fails (here the corpus's init_loop, whose
// initialiser never ends) stays interpreted and is never built.
func TestNeverServedNeverBuilt(t *testing.T) {
	g := goCmd(t)
	cases, err := sandboxtest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var src []byte
	for _, c := range cases {
		if c.Name == "init_loop" {
			src = c.Source
		}
	}
	tier, _ := newTier(t, Options{Go: g})
	_, err = tier.Run(context.Background(), sandbox.Call{Tool: "init_loop", Source: src, Input: []byte(`{}`), Timeout: time.Second})
	if adaptbot.FailureOf(err) != adaptbot.FailTimeout {
		t.Fatalf("init_loop: %v, want a timeout", err)
	}
	tier.Close()
	if s := tier.Status("init_loop", src); s.State != StateWaiting {
		t.Errorf("status %+v, want waiting", s)
	}
	if n := builds(tier); n != 0 {
		t.Errorf("compiled %d times", n)
	}
}
