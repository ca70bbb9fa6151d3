package toolbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// The tests below run tools that call tools in the real sandbox, in both
// runners: the shipped unit_converter and calculator, the trip_time example
// (testdata/tools/trip_time, which builds on them), and small tools that
// misbehave on purpose.

// shipped reads a tool's source from the repository.
func shipped(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolFrom is a serving registry tool made of src, as the registry would
// record it.
func toolFrom(t testing.TB, name, src string) registry.Tool {
	t.Helper()
	spec, err := contract.Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sum := sha256.Sum256([]byte(src))
	return registry.Tool{Entry: registry.Entry{Tool: adaptbot.Tool{Name: name, Description: spec.Description, Category: spec.Category, Parameters: spec.Parameters, Version: 1, Origin: adaptbot.OriginManual}, TimeoutMS: spec.Timeout.Milliseconds(), SHA256: hex.EncodeToString(sum[:]), Status: registry.OK}, Code: []byte(src)}
}

// caller returns a tool named name whose Execute calls callee with args
// and fails with its error, or returns "name>" and its output; called with
// {"skip": true}, it returns at once, the same code run but the call.
func caller(name, callee, args string) string {
	return `// Package ` + name + ` calls ` + callee + `.
package ` + name + `

import (
	"context"
	"encoding/json"

	"adaptbot/toolkit"
)

type Input struct {
	Skip bool ` + "`json:\"skip,omitempty\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	if in.Skip {
		return "` + name + `>skipped", nil
	}
	out, err := toolkit.Call(ctx, "` + callee + `", json.RawMessage(` + "`" + args + "`" + `))
	if err != nil {
		return "", err
	}
	return "` + name + `>" + out, nil
}
`
}

const boom = `// Package boom panics.
package boom

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	var m map[string]int
	m["x"]++
	return "", nil
}
`

// stall ignores its context and outlives its own limit.
const stall = `// Package stall sleeps past its limit.
package stall

import (
	"context"
	"time"
)

const Timeout = 300 * time.Millisecond

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(20 * time.Second)
	return "woke", nil
}
`

const leaf = `// Package leaf answers.
package leaf

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	return "leaf", nil
}
`

// nestedWorld is a Set over tools that call tools, on runner.
func nestedWorld(t testing.TB, runner sandbox.Runner) (*Set, *fakeRegistry) {
	t.Helper()
	sources := map[string]string{
		"unit_converter": shipped(t, "tools/unit_converter/unit_converter.go"),
		"calculator":     shipped(t, "tools/calculator/calculator.go"),
		"trip_time":      shipped(t, "testdata/tools/trip_time/trip_time.go"),
		"loop_a":         caller("loop_a", "loop_b", `{}`),
		"loop_b":         caller("loop_b", "loop_a", `{}`),
		"calls_nope":     caller("calls_nope", "nope", `{}`),
		"calls_boom":     caller("calls_boom", "boom", `{}`),
		"calls_stall":    caller("calls_stall", "stall", `{}`),
		"bad_args":       caller("bad_args", "unit_converter", `{"value": "five"}`),
		"calls_remote":   caller("calls_remote", "srv__echo", `{"text": "hi"}`),
		"boom":           boom,
		"stall":          stall,
		"leaf":           leaf,
	}
	for i := 1; i <= 6; i++ {
		sources[fmt.Sprint("deep", i)] = caller(fmt.Sprint("deep", i), fmt.Sprint("deep", i+1), `{}`)
	}
	sources["deep7"] = strings.ReplaceAll(leaf, "leaf", "deep7")
	reg := newFakeRegistry()
	for name, src := range sources {
		reg.tools[name] = toolFrom(t, name, src)
	}
	set := New(reg, runner)
	hub := &fakeHub{call: func(server, tool string, args json.RawMessage) (string, error) {
		return server + "/" + tool + " got " + string(args), nil
	}}
	hub.specs = []Spec{remoteSpec("srv", "echo", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
	set.Join(hub)
	return set, reg
}

func nestedRunners(t *testing.T, poolSize int) map[string]sandbox.Runner {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := sandbox.Options{PoolSize: poolSize, CallTimeout: 5 * time.Second, QueueTimeout: 8 * time.Second,
		WorkerCommand: []string{exe}, WorkerEnv: []string{workerEnv + "=1"}, Log: slog.New(slog.DiscardHandler)}
	pool, err := sandbox.NewPool(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	opts.Mode = sandbox.ModeInProcess
	in := sandbox.NewInProcess(opts)
	t.Cleanup(func() { in.Close() })
	return map[string]sandbox.Runner{"workers": pool, "inprocess": in}
}

func callTool(t testing.TB, set *Set, ctx context.Context, name, args string) (string, error) {
	t.Helper()
	tool, ok := set.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tool.Call(ctx, json.RawMessage(args))
}

// observed keeps what a Set's observer is told.
type observed struct {
	mu     sync.Mutex
	events []CallEvent
}

func observe(set *Set) *observed {
	o := &observed{}
	set.OnCall(func(_ context.Context, ev CallEvent) {
		o.mu.Lock()
		o.events = append(o.events, ev)
		o.mu.Unlock()
	})
	return o
}

func (o *observed) take() []CallEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.events
	o.events = nil
	return out
}

func TestTripTimeCallsItsTools(t *testing.T) {
	for mode, runner := range nestedRunners(t, 2) {
		t.Run(mode, func(t *testing.T) {
			set, _ := nestedWorld(t, runner)
			seen := observe(set)
			ctx, log := WithCallLog(context.Background())
			out, err := callTool(t, set, ctx, "trip_time", `{"miles": 100, "speed_kmh": 80}`)
			if err != nil || out != "100 miles (160.9344 km) at 80 km/h takes 2.01168 hours (2 h 1 min)" {
				t.Fatalf("trip_time = %q, %v", out, err)
			}
			calls := log.Calls()
			var got []string
			for _, c := range calls {
				got = append(got, fmt.Sprintf("%d %s depth %d parent %d caller %q v%d %s", c.ID, c.Tool, c.Depth, c.Parent, c.Caller, c.Version, c.Kind))
				if c.Running || c.Error != "" || c.Output == "" || c.Duration <= 0 {
					t.Errorf("call %d: %+v; want it finished, with an output and a time", c.ID, c)
				}
			}
			want := []string{
				`1 trip_time depth 0 parent 0 caller "" v1 `,
				`2 unit_converter depth 1 parent 1 caller "trip_time" v1 `,
				`3 calculator depth 1 parent 1 caller "trip_time" v1 `,
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the call log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if string(calls[1].Arguments) != `{"from":"miles","to":"km","value":100}` || calls[1].Output != "100 miles (mi) = 160.9344 kilometers (km)" {
				t.Errorf("the nested call was recorded as %s → %q", calls[1].Arguments, calls[1].Output)
			}
			if nested := log.Nested(); len(nested) != 2 || nested[0].Tool != "unit_converter" {
				t.Errorf("Nested() = %+v", nested)
			}
			var told []string
			for _, ev := range seen.take() {
				told = append(told, fmt.Sprintf("%s depth %d caller %q", ev.Tool, ev.Depth, ev.Caller))
			}
			wantTold := []string{`unit_converter depth 1 caller "trip_time"`, `calculator depth 1 caller "trip_time"`, `trip_time depth 0 caller ""`}
			if !slices.Equal(told, wantTold) {
				t.Errorf("the observer was told %q, want %q (each call as it ends)", told, wantTold)
			}
		})
	}
}

// TestNestedCallsFailClearly checks every way a nested call can go wrong:
// each fails at once or within its limit, with an error that says what
// happened, never a hang.
func TestNestedCallsFailClearly(t *testing.T) {
	for mode, runner := range nestedRunners(t, 2) {
		t.Run(mode, func(t *testing.T) {
			set, reg := nestedWorld(t, runner)
			seen := observe(set)
			tests := []struct {
				tool string
				want []string         // what the caller's error says
				kind adaptbot.Failure // the kind the failing nested call is recorded with
			}{
				{"loop_a", []string{"tool loop_b cannot call loop_a: loop_a → loop_b → loop_a is a cycle"}, adaptbot.FailRefused},
				{"deep1", []string{"tool deep5 cannot call deep6: deep1 → deep2 → deep3 → deep4 → deep5 → deep6 is 5 calls deep, past the limit of 4 (ADAPTBOT_MAX_CALL_DEPTH)"}, adaptbot.FailRefused},
				{"calls_nope", []string{`no tool named "nope"`}, adaptbot.FailNotFound},
				{"calls_boom", []string{"tool boom: panic: assignment to entry in nil map"}, adaptbot.FailPanic},
				{"calls_stall", []string{"tool stall: timeout: ran past its 300ms time limit"}, adaptbot.FailTimeout},
				{"bad_args", []string{"tool unit_converter: invalid arguments:", "value"}, adaptbot.FailInvalidArgs},
			}
			for _, tt := range tests {
				began := time.Now()
				_, err := callTool(t, set, context.Background(), tt.tool, `{}`)
				if took := time.Since(began); took > 4*time.Second {
					t.Errorf("%s took %v", tt.tool, took)
				}
				if err == nil {
					t.Errorf("%s succeeded", tt.tool)
					continue
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not say %q", tt.tool, err, w)
					}
				}
				events := seen.take()
				if len(events) < 2 {
					t.Errorf("%s: the observer heard %d calls", tt.tool, len(events))
					continue
				}
				// The first call to end is the innermost: the one that failed.
				if nested := events[0]; adaptbot.FailureOf(nested.Err) != tt.kind || nested.Depth == 0 {
					t.Errorf("%s: the failing nested call was told as %+v, want kind %s", tt.tool, nested, tt.kind)
				}
			}

			// The depth limit is the Set's to set.
			set.LimitCallDepth(6)
			if out, err := callTool(t, set, context.Background(), "deep1", `{}`); err != nil || out != "deep1>deep2>deep3>deep4>deep5>deep6>deep7" {
				t.Errorf("a chain of six under a limit of six = %q, %v", out, err)
			}
			set.LimitCallDepth(0)

			// A callee deleted after its caller was written.
			if out, err := callTool(t, set, context.Background(), "trip_time", `{"miles": 1, "speed_kmh": 1}`); err != nil {
				t.Fatalf("trip_time before the delete: %q, %v", out, err)
			}
			reg.remove("unit_converter")
			_, err := callTool(t, set, context.Background(), "trip_time", `{"miles": 1, "speed_kmh": 1}`)
			if err == nil || !strings.Contains(err.Error(), `no tool named "unit_converter"`) {
				t.Errorf("trip_time after its callee was deleted = %v", err)
			}
		})
	}
}

func TestNestedCallOfAnExternalTool(t *testing.T) {
	set, _ := nestedWorld(t, nestedRunners(t, 1)["inprocess"])
	ctx, log := WithCallLog(context.Background())
	out, err := callTool(t, set, ctx, "calls_remote", `{}`)
	if err != nil || out != `calls_remote>srv/echo got {"text": "hi"}` {
		t.Fatalf("calls_remote = %q, %v", out, err)
	}
	if calls := log.Calls(); len(calls) != 2 || calls[1].Tool != "srv/echo" || calls[1].Depth != 1 {
		t.Errorf("the call log = %+v", calls)
	}
	if tool, ok := set.Callee("srv__echo"); !ok || tool.Spec().Name != "srv/echo" {
		t.Errorf("Callee(srv__echo) = %v, %v", tool, ok)
	}
	if _, ok := set.Callee("srv__nope"); ok {
		t.Error("Callee found srv__nope")
	}
}

// TestNestedCallsFillNoPool runs many trip_times at once on pools of one
// and two workers: each holds a worker while its callees run, and every one
// finishes.
func TestNestedCallsFillNoPool(t *testing.T) {
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprint("pool of ", size), func(t *testing.T) {
			set, _ := nestedWorld(t, nestedRunners(t, size)["workers"])
			var wg sync.WaitGroup
			errs := make(chan error, 4*size)
			for i := range 4 * size {
				wg.Go(func() {
					out, err := callTool(t, set, context.Background(), "trip_time", fmt.Sprintf(`{"miles": %d, "speed_kmh": 60}`, 10*(i+1)))
					if err == nil && !strings.Contains(out, "takes") {
						err = fmt.Errorf("trip_time = %q", out)
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestCallingWithOverrides runs a source outside the toolbox, as the
// generator's gate does, with a candidate version of a tool it calls
// serving in place of the registry's.
func TestCallingWithOverrides(t *testing.T) {
	runner := nestedRunners(t, 1)["inprocess"]
	set, _ := nestedWorld(t, runner)
	candidate := toolFrom(t, "unit_converter", strings.Replace(shipped(t, "tools/unit_converter/unit_converter.go"),
		`func Execute(ctx context.Context, in Input) (string, error) {`,
		`func Execute(ctx context.Context, in Input) (string, error) {
	if in.From == "miles" {
		return "about " + fmt.Sprint(in.Value) + " of them", nil
	}`, 1))
	trip := []byte(shipped(t, "testdata/tools/trip_time/trip_time.go"))
	run := func(ctx context.Context) (string, error) {
		res, err := runner.Run(ctx, sandbox.Call{Tool: "trip_time", Source: trip, Input: json.RawMessage(`{"miles": 100, "speed_kmh": 80}`)})
		return res.Output, err
	}
	if out, err := run(set.Calling(context.Background(), "trip_time")); err != nil || !strings.Contains(out, "2.01168 hours") {
		t.Errorf("trip_time with the serving unit_converter = %q, %v", out, err)
	}
	_, err := run(set.Calling(context.Background(), "trip_time", candidate))
	if err == nil || !strings.Contains(err.Error(), `unit_converter said "about 100 of them"`) {
		t.Errorf("trip_time with the candidate unit_converter = %v", err)
	}
	// A source run outside the toolbox still may not call itself: the
	// contract refuses it before it runs (or, were that bypassed, the
	// chain check would).
	_, err = runner.Run(set.Calling(context.Background(), "loop_a"), sandbox.Call{Tool: "loop_a", Source: []byte(caller("loop_a", "loop_a", `{}`))})
	var ce *ChainError
	if !errors.As(errors.Unwrap(err), &ce) && !strings.Contains(fmt.Sprint(err), "loop_a → loop_a is a cycle") &&
		!strings.Contains(fmt.Sprint(err), "a tool may not call itself") {
		t.Errorf("a source calling itself = %v", err)
	}
}

func TestFailureOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want adaptbot.Failure
	}{
		{nil, ""},
		{&ArgsError{Tool: "x"}, adaptbot.FailInvalidArgs},
		{fmt.Errorf("wrapped: %w", &ChainError{Cycle: true}), adaptbot.FailRefused},
		{NotFound("x"), adaptbot.FailNotFound},
		{&sandbox.Error{Kind: adaptbot.FailError}, adaptbot.FailError},
		{&sandbox.Error{Kind: adaptbot.FailPanic}, adaptbot.FailPanic},
		{&sandbox.Error{Kind: adaptbot.FailTimeout}, adaptbot.FailTimeout},
		{&sandbox.Error{Kind: adaptbot.FailMemory}, adaptbot.FailMemory},
		{&sandbox.Error{Kind: adaptbot.FailBadOutput}, adaptbot.FailBadOutput},
		{&sandbox.Error{Kind: adaptbot.FailInvalidArgs}, adaptbot.FailInvalidArgs},
		{&sandbox.Error{Kind: adaptbot.FailCrash}, adaptbot.FailCrash},
		{&sandbox.Error{Kind: adaptbot.FailUnavailable}, adaptbot.FailUnavailable},
		{fmt.Errorf("tool x: %w", context.Canceled), adaptbot.FailCancelled},
		{context.DeadlineExceeded, adaptbot.FailTimeout},
		{errors.New("the server said no"), adaptbot.FailError},
	} {
		if got := adaptbot.FailureOf(tt.err); got != tt.want {
			t.Errorf("adaptbot.FailureOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestCallLogNests(t *testing.T) {
	set, _ := nestedWorld(t, nestedRunners(t, 1)["inprocess"])
	ctx, outer := WithCallLog(context.Background())
	stepCtx, step := WithCallLog(ctx)
	if _, err := callTool(t, set, stepCtx, "trip_time", `{"miles": 1, "speed_kmh": 1}`); err != nil {
		t.Fatal(err)
	}
	if _, err := callTool(t, set, ctx, "leaf", `{}`); err != nil {
		t.Fatal(err)
	}
	if n, m := len(step.Calls()), len(outer.Calls()); n != 3 || m != 4 {
		t.Errorf("the step's log has %d calls and the request's %d; want 3 and 4", n, m)
	}
	var none *CallLog
	if none.Calls() != nil {
		t.Error("a nil log has calls")
	}
	long := strings.Repeat("x", 3*MaxRecordedText)
	if got := recordedArgs(json.RawMessage(`{"s": "` + long + `"}`)); !json.Valid(got) || len(got) > MaxRecordedText+16 {
		t.Errorf("long arguments recorded as %d bytes (valid JSON: %v)", len(got), json.Valid(got))
	}
}
