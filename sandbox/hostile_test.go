package sandbox_test

import (
	"context"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/sandbox/sandboxtest"
)

// TestHostileCorpus runs every tool of testdata/hostile through a real pool
// and checks each gets its outcome; then that a normal call still succeeds,
// the pool is back at its configured size, and Close leaves no process.
func TestHostileCorpus(t *testing.T) {
	cases, opts, skipRedirect := corpusSetup(t)
	p := newPool(t, opts)
	// Where the kernel has Landlock, the corpus runs in confined workers.
	if _, err := sandbox.LandlockABI(); err == nil && !p.Stats().Confined {
		t.Errorf("workers are %s", p.Stats().Confinement)
	}
	seen := map[int]bool{}
	note := func() {
		for _, pid := range p.Stats().PIDs {
			seen[pid] = true
		}
	}
	note()

	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			skipRedirect(t, c)
			before := waitFull(t, p)
			start := time.Now()
			res, err := p.Run(context.Background(), corpusCall(c))
			if err := c.Check(res, err); err != nil {
				t.Error(err)
			}
			t.Logf("%v: %v", time.Since(start).Round(time.Millisecond), err)
			after := waitFull(t, p)
			note()
			if c.Recycles && after.Restarts == before.Restarts {
				t.Errorf("the worker was not replaced after the tool left goroutines running")
			}
			// A normal call right after.
			res, err = run(t, p, "calculator", calculator, `{"a":2,"b":3}`)
			if err != nil || res.Output != `{"sum":5}` {
				t.Fatalf("normal call after %s: %q, %v", c.Name, res.Output, err)
			}
		})
	}

	s := waitFull(t, p)
	t.Logf("after the corpus: %+v", s)
	if s.Live != opts.PoolSize {
		t.Errorf("live workers %d, want %d", s.Live, opts.PoolSize)
	}
	note()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for pid := range seen {
		if !processGone(pid) {
			t.Errorf("worker %d still exists after Close", pid)
		}
	}
}

// TestHostileCorpusInProcess runs the cases the in-process runner survives.
func TestHostileCorpusInProcess(t *testing.T) {
	cases, opts, skipRedirect := corpusSetup(t)
	r := sandbox.NewInProcess(opts)
	defer r.Close()
	for _, c := range cases {
		if !c.InProcess {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			skipRedirect(t, c)
			res, err := r.Run(context.Background(), corpusCall(c))
			if err := c.Check(res, err); err != nil {
				t.Error(err)
			}
		})
	}
	res, err := run(t, r, "calculator", calculator, `{"a":2,"b":3}`)
	if err != nil || res.Output != `{"sum":5}` {
		t.Fatalf("normal call after the corpus: %q, %v", res.Output, err)
	}
}

// corpusSetup reads the corpus and returns runner options for it, with the
// redirector fixture when this machine can serve it, and a function that
// skips the case that needs the fixture when it cannot.
func corpusSetup(t *testing.T) ([]sandboxtest.Case, sandbox.Options, func(*testing.T, sandboxtest.Case)) {
	t.Helper()
	cases, err := sandboxtest.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	// The cases that must end some other way (a crash at the stack limit,
	// an output over its cap) get a limit far above what they take, since
	// under -race on a busy machine recursing to the stack limit or
	// building 100 MiB took over 3 s; a passing case ends as soon as it
	// fails as it should. The cases that must time out get one second.
	opts.CallTimeout = 20 * time.Second
	redirector, stop, rerr := sandboxtest.Redirector()
	if rerr == nil {
		t.Cleanup(stop)
		opts.Toolkit = redirector
	}
	skip := func(t *testing.T, c sandboxtest.Case) {
		if c.Needs == sandboxtest.NeedsRedirector && rerr != nil {
			t.Skipf("no redirector: %v", rerr)
		}
	}
	return cases, opts, skip
}

func corpusCall(c sandboxtest.Case) sandbox.Call {
	call := sandbox.Call{Tool: c.Name, Source: c.Source, Input: []byte(`{}`)}
	if c.Kind == adaptbot.FailTimeout {
		call.Timeout = time.Second
	}
	return call
}
