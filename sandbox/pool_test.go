package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/sandbox"
)

const sleeper = `// Package sleeper sleeps, honouring its context or not.
package sleeper

import (
	"context"
	"time"
)

type Input struct {
	Cooperative bool ` + "`json:\"cooperative\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	if in.Cooperative {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(10 * time.Second):
			return "slept", nil
		}
	}
	time.Sleep(10 * time.Second)
	return "slept", nil
}
`

func TestPoolCloseKillsEveryWorker(t *testing.T) {
	opts := testOptions(t)
	p, err := sandbox.NewPool(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.Live != opts.PoolSize || len(s.PIDs) != opts.PoolSize {
		t.Fatalf("after NewPool: %+v", s)
	}
	// One worker busy at Close.
	errc := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), sandbox.Call{Tool: "sleeper", Source: []byte(sleeper), Input: []byte(`{}`)})
		errc <- err
	}()
	for p.Stats().Busy == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wantKind(t, <-errc, adaptbot.FailUnavailable, "closed")
	for _, pid := range s.PIDs {
		if !processGone(pid) {
			t.Errorf("worker %d outlived Close", pid)
		}
	}
	if s := p.Stats(); s.Live != 0 {
		t.Errorf("after Close: %+v", s)
	}
}

// A worker gets /dev/null for input and none of the server's environment.
func TestPoolWorkerIsolation(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	p := newPool(t, testOptions(t))
	for _, pid := range p.Stats().PIDs {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(env), "sk-must-not-leak") {
			t.Errorf("worker %d has the server's secret in its environment", pid)
		}
		if !strings.Contains(string(env), "GOMEMLIMIT=") {
			t.Errorf("worker %d has no GOMEMLIMIT: %q", pid, env)
		}
		stdin, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid))
		if err != nil {
			t.Fatal(err)
		}
		if stdin != os.DevNull {
			t.Errorf("worker %d reads %s, want %s", pid, stdin, os.DevNull)
		}
	}
}

func TestPoolCallerCancels(t *testing.T) {
	p := newPool(t, testOptions(t))
	// Each worker loads the sleeper first, so the cancels below meet a
	// running tool, not a worker still compiling it: under -race on a
	// loaded machine a compile can outlast the grace, and the worker would
	// be replaced for it. The two calls hold both workers at once.
	var warm sync.WaitGroup
	for range 2 {
		warm.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			p.Run(ctx, sandbox.Call{Tool: "sleeper", Source: []byte(sleeper), Input: []byte(`{"cooperative":true}`)}) //nolint:errcheck // it ends cancelled
		})
	}
	warm.Wait()
	for _, tt := range []struct {
		input        string
		wantRestarts int64
	}{
		{`{"cooperative":true}`, 0}, // the tool returns: the worker stays
		{`{}`, 1},                   // the tool sleeps on: the worker is killed
	} {
		t.Run(tt.input, func(t *testing.T) {
			before := waitFull(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Run(ctx, sandbox.Call{Tool: "sleeper", Source: []byte(sleeper), Input: []byte(tt.input)})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err %v, want the caller's deadline", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v after the caller gave up", d)
			}
			after := waitFull(t, p)
			if got := after.Restarts - before.Restarts; got != tt.wantRestarts {
				t.Errorf("%d workers replaced, want %d", got, tt.wantRestarts)
			}
		})
	}
}

func TestPoolQueueTimeout(t *testing.T) {
	opts := testOptions(t)
	opts.PoolSize = 1
	opts.QueueTimeout = 100 * time.Millisecond
	opts.CallTimeout = 5 * time.Second
	p := newPool(t, opts)
	go p.Run(context.Background(), sandbox.Call{Tool: "sleeper", Source: []byte(sleeper), Input: []byte(`{"cooperative":true}`)}) //nolint:errcheck
	for p.Stats().Busy == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	_, err := run(t, p, "calculator", calculator, `{}`)
	wantKind(t, err, adaptbot.FailUnavailable, "no worker was free within 100ms")
}

func TestPoolStartFailure(t *testing.T) {
	opts := testOptions(t)
	opts.WorkerCommand = []string{"/nonexistent/adaptbot"}
	if _, err := sandbox.NewPool(opts); err == nil {
		t.Fatal("NewPool started workers from a missing binary")
	}
	opts.WorkerCommand = []string{"/bin/true"}
	if _, err := sandbox.NewPool(opts); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("a binary that is not a worker: %v", err)
	}
}

// With a cache of one tool version per worker, alternating tools makes the
// worker ask for sources it has dropped.
func TestPoolWorkerCacheEviction(t *testing.T) {
	opts := testOptions(t)
	opts.PoolSize = 1
	opts.CacheSize = 1
	p := newPool(t, opts)
	for i := 0; i < 6; i++ {
		if i%2 == 0 {
			res, err := run(t, p, "calculator", calculator, fmt.Sprintf(`{"a":%d}`, i))
			if err != nil || res.Output != fmt.Sprintf(`{"sum":%d}`, i) {
				t.Fatalf("call %d: %q, %v", i, res.Output, err)
			}
			continue
		}
		res, err := run(t, p, "echo", echo, `{"text":"x"}`)
		if err != nil || res.Output != "X" {
			t.Fatalf("call %d: %q, %v", i, res.Output, err)
		}
	}
	if s := p.Stats(); s.Restarts != 0 {
		t.Errorf("workers replaced: %+v", s)
	}
}

// Calls beyond the pool's size queue and all complete.
func TestPoolQueues(t *testing.T) {
	opts := testOptions(t)
	opts.PoolSize = 1
	p := newPool(t, opts)
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := run(t, p, "calculator", calculator, fmt.Sprintf(`{"a":%d}`, i))
			if err != nil || res.Output != fmt.Sprintf(`{"sum":%d}`, i) {
				t.Errorf("call %d: %q, %v", i, res.Output, err)
			}
		}()
	}
	wg.Wait()
}

func TestNew(t *testing.T) {
	if _, err := sandbox.New(sandbox.Options{Mode: "docker"}); err == nil {
		t.Error("New accepted an unknown mode")
	}
	r, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if s := r.Stats(); s.Mode != sandbox.ModeInProcess {
		t.Errorf("stats %+v", s)
	}
	for in, want := range map[string]sandbox.Mode{"": sandbox.ModeWorkers, "workers": sandbox.ModeWorkers, "inprocess": sandbox.ModeInProcess} {
		if got, err := sandbox.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := sandbox.ParseMode("docker"); err == nil {
		t.Error("ParseMode accepted docker")
	}
}

// Workers that die as soon as they start are replaced with a growing
// delay, not in a tight loop.
func TestPoolCrashLoopBacksOff(t *testing.T) {
	opts := testOptions(t)
	opts.PoolSize = 1
	opts.WorkerEnv = []string{workerEnvVar + "=die-after-hello"}
	opts.Landlock = sandbox.LandlockAuto // this fake worker does not confine itself
	opts.QueueTimeout = 500 * time.Millisecond
	began := time.Now()
	p := newPool(t, opts)
	// Each replacement of a worker that died young waits twice as long as
	// the one before: 100, 200, 400 ms. So the fourth death comes at least
	// 700 ms after the pool started, where a tight loop would get there in
	// a few tens of milliseconds. Waiting for the condition, a slow machine
	// only makes this later, never earlier.
	deadline := time.Now().Add(30 * time.Second)
	for p.Stats().Restarts < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("restarts = %d after 30s: the pool stopped replacing the crashing worker", p.Stats().Restarts)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(began)
	t.Logf("4 restarts after %v: %+v", took, p.Stats())
	if took < 700*time.Millisecond {
		t.Errorf("4 restarts within %v: the replacements of a crashing worker do not back off", took)
	}
	_, err := p.Run(context.Background(), sandbox.Call{Tool: "calculator", Source: []byte(calculator), Timeout: 200 * time.Millisecond})
	if k := adaptbot.FailureOf(err); k != adaptbot.FailUnavailable && k != adaptbot.FailCrash {
		t.Errorf("a call on a broken worker: %v", err)
	}
}
