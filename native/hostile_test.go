package native

import (
	"context"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
)

// corpusSources are the hostile tools the native builder accepts, but
// init_loop, whose initialiser never ends and would stop any program it is
// compiled into from starting (see TestHostileCorpusNative).
func corpusSources(t testing.TB) []Source {
	cases, err := sandboxtest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var out []Source
	for _, c := range cases {
		if Check(c.Name, c.Source) == nil && c.Name != "init_loop" {
			out = append(out, Source{Tool: c.Name, Code: c.Source})
		}
	}
	return out
}

// TestHostileCorpusNative runs the sandbox's hostile corpus
// (sandbox/testdata/hostile) on the native tier: every case the native
// builder accepts runs in a pool of native workers, confined as interpreted
// ones, and must meet the outcome it meets interpreted; every case it
// refuses (a refused import, text/template's file functions) stays on the
// interpreted tier, where the sandbox's own test checks it.
func TestHostileCorpusNative(t *testing.T) {
	cases, err := sandboxtest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	bin := sharedBinary(t, nativeTools(t)...)
	opts := sandboxOptions(t)
	opts.PoolSize = 2
	// Time for the cases that must finish (a stack overflow takes a while
	// on a busy machine); the cases that must time out get one second.
	opts.CallTimeout = 10 * time.Second
	opts.WorkerCommand = []string{bin}
	opts.WorkerEnv = nil
	redirector, stop, rerr := sandboxtest.Redirector()
	if rerr == nil {
		defer stop()
		opts.Toolkit = redirector
	}
	p, err := sandbox.NewPool(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := sandbox.LandlockABI(); err == nil && !p.Stats().Confined {
		t.Errorf("native workers are %s", p.Stats().Confinement)
	}
	calc := readTool(t, "../tools/calculator/calculator.go")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if c.Name == "init_loop" {
				t.Skip("never compiled: a tool is built natively only after a successful call (TestNeverServedNeverBuilt)")
			}
			if err := Check(c.Name, c.Source); err != nil {
				// Refused natively: it never leaves the interpreter.
				if c.Kind != adaptbot.FailCompile && c.Name != "template_method_call" {
					t.Errorf("refused natively, but the interpreter runs it: %v", err)
				}
				t.Logf("refused natively: %v", err)
				return
			}
			if c.Needs == sandboxtest.NeedsRedirector && rerr != nil {
				t.Skipf("no redirector: %v", rerr)
			}
			call := sandbox.Call{Tool: c.Name, Source: c.Source, Input: []byte(`{}`)}
			if c.Kind == adaptbot.FailTimeout {
				call.Timeout = time.Second
			}
			before := waitIdle(t, p)
			res, err := p.Run(context.Background(), call)
			if err := c.Check(res, err); err != nil {
				t.Error(err)
			}
			t.Logf("%v", err)
			if after := waitIdle(t, p); c.Recycles && after.Restarts == before.Restarts {
				t.Errorf("the worker was not replaced after the tool left goroutines running")
			}
			// A normal call right after.
			if out, err := p.Run(context.Background(), sandbox.Call{Tool: "calculator", Source: calc, Input: []byte(`{"expression":"2+3"}`)}); err != nil || out.Output != "2+3 = 5" {
				t.Fatalf("normal call after %s: %q, %v", c.Name, out.Output, err)
			}
		})
	}
}

// waitIdle waits until the pool is back to its size, every worker idle.
func waitIdle(t *testing.T, p *sandbox.Pool) sandbox.Stats {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := p.Stats()
		if s.Live == s.Size && s.Busy == 0 && s.Starting == 0 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool not back to size: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
