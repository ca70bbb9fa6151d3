package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/poll"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// testHost stands in for the toolbox: it runs the tools a tool calls, by
// name, on the same runner, as nested calls. The context it is given
// carries it already, so callees may call further.
type testHost struct {
	r     sandbox.Runner
	tools map[string]string
	calls atomic.Int64
	// errs keeps each nested call's error (nil when it succeeded), by tool.
	mu   sync.Mutex
	errs map[string][]error
}

func newHost(r sandbox.Runner, tools map[string]string) *testHost {
	return &testHost{r: r, tools: tools, errs: map[string][]error{}}
}

func (h *testHost) CallTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	h.calls.Add(1)
	src, ok := h.tools[name]
	if !ok {
		return "", fmt.Errorf("no tool named %q", name)
	}
	res, err := h.r.Run(ctx, sandbox.Call{Tool: name, Source: []byte(src), Input: args, Nested: true})
	h.mu.Lock()
	h.errs[name] = append(h.errs[name], err)
	h.mu.Unlock()
	return res.Output, err
}

func (h *testHost) errsOf(name string) []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs[name]...)
}

// call runs tool as a call from outside, with h serving its nested calls.
func (h *testHost) call(ctx context.Context, tool, input string) (sandbox.Result, error) {
	return h.r.Run(toolkit.WithCaller(ctx, h), sandbox.Call{Tool: tool, Source: []byte(h.tools[tool]), Input: []byte(input)})
}

const adder = `// Package adder adds two numbers.
package adder

import "context"

type Input struct {
	A float64 ` + "`json:\"a\"`" + `
	B float64 ` + "`json:\"b\"`" + `
}

type Output struct {
	Sum float64 ` + "`json:\"sum\"`" + `
}

func Execute(ctx context.Context, in Input) (Output, error) {
	return Output{Sum: in.A + in.B}, nil
}
`

// doubler adds a and b with adder, then the sum to itself: two nested
// calls, one decoded with CallJSON, one read as text.
const doubler = `// Package doubler doubles a sum with adder.
package doubler

import (
	"context"
	"fmt"

	"adaptbot/toolkit"
)

type Input struct {
	A float64 ` + "`json:\"a\"`" + `
	B float64 ` + "`json:\"b\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	var first struct {
		Sum float64 ` + "`json:\"sum\"`" + `
	}
	if err := toolkit.CallJSON(ctx, "adder", map[string]any{"a": in.A, "b": in.B}, &first); err != nil {
		return "", err
	}
	text, err := toolkit.Call(ctx, "adder", map[string]any{"a": first.Sum, "b": first.Sum})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("doubled: %s", text), nil
}
`

// relay is the tool relay_<callee>: it calls the tool callee (its name
// written out, as the contract wants) and says what came back.
func relay(callee string) string {
	return `// Package relay_` + callee + ` calls a tool and reports its answer or error.
package relay_` + callee + `

import (
	"context"
	"encoding/json"

	"adaptbot/toolkit"
)

type Input struct {
	Args string ` + "`json:\"args,omitempty\"`" + `
	Bare bool   ` + "`json:\"bare,omitempty\"`" + `
}

func Execute(ctx context.Context, in Input) (string, error) {
	if in.Bare {
		ctx = context.Background()
	}
	out, err := toolkit.Call(ctx, "` + callee + `", json.RawMessage(in.Args))
	if err != nil {
		return "error: " + err.Error(), nil
	}
	return "ok: " + out, nil
}
`
}

const panicker = `// Package panicker panics.
package panicker

import "context"

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	var m map[string]int
	m["boom"]++
	return "unreachable", nil
}
`

// deaf sleeps and ignores its context: only killing its worker stops it.
const deaf = `// Package deaf sleeps past its limits.
package deaf

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(20 * time.Second)
	return "woke", nil
}
`

// patient waits for its context to end and says why.
const patient = `// Package patient waits until cancelled.
package patient

import (
	"context"
	"time"
)

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(20 * time.Second):
		return "never cancelled", nil
	}
}
`

// hop returns a tool that calls next, or says "bottom" when next is "".
func hop(name, next string) string {
	call := `return "bottom", nil`
	if next != "" {
		call = `out, err := toolkit.Call(ctx, "` + next + `", nil)
	if err != nil {
		return "", err
	}
	return "` + name + `>" + out, nil`
	}
	imports := `import "context"`
	if next != "" {
		imports = "import (\n\t\"context\"\n\n\t\"adaptbot/toolkit\"\n)"
	}
	return "// Package " + name + " is one hop of a chain.\npackage " + name + "\n\n" + imports + `

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
	` + call + `
}
`
}

func nestedTools() map[string]string {
	return map[string]string{
		"adder": adder, "doubler": doubler, "panicker": panicker,
		"relay_missing": relay("missing"), "relay_panicker": relay("panicker"), "relay_adder": relay("adder"),
		"relay_deaf": relay("deaf"), "relay_patient": relay("patient"),
		"deaf": deaf, "patient": patient,
		"hop1": hop("hop1", "hop2"), "hop2": hop("hop2", "hop3"), "hop3": hop("hop3", "hop4"), "hop4": hop("hop4", ""),
	}
}

func TestNestedCall(t *testing.T) {
	// A chain of four on a pool of two starts two extra workers, and each
	// compiles its tool: time enough under the race detector on a busy
	// machine.
	opts := testOptions(t)
	opts.CallTimeout = 10 * time.Second
	for name, r := range runners(t, opts) {
		t.Run(name, func(t *testing.T) {
			h := newHost(r, nestedTools())
			res, err := h.call(context.Background(), "doubler", `{"a": 2, "b": 3}`)
			if err != nil || res.Output != `doubled: {"sum":10}` {
				t.Fatalf("doubler = %q, %v; want the second sum as JSON text", res.Output, err)
			}
			if n := h.calls.Load(); n != 2 {
				t.Errorf("the host ran %d nested calls, want 2", n)
			}
			res, err = h.call(context.Background(), "hop1", `{}`)
			if err != nil || res.Output != "hop1>hop2>hop3>bottom" {
				t.Errorf("a chain of four = %q, %v", res.Output, err)
			}
		})
	}
}

func TestNestedCallErrors(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 10 * time.Second
	for name, r := range runners(t, opts) {
		t.Run(name, func(t *testing.T) {
			h := newHost(r, nestedTools())
			for _, tt := range []struct{ relay, input, want string }{
				{"relay_missing", `{}`, `error: no tool named "missing"`},
				{"relay_panicker", `{}`, "error: tool panicker: panic: assignment to entry in nil map"},
				{"relay_adder", `{"args": "{\"a\": \"x\"}"}`, "error: tool adder: invalid_arguments: arguments do not match Input"},
				{"relay_adder", `{"bare": true}`, `error: toolkit.Call("adder"): calling other tools is not available here (pass the ctx that Execute was given)`},
			} {
				res, err := h.call(context.Background(), tt.relay, tt.input)
				if err != nil || !strings.HasPrefix(res.Output, tt.want) {
					t.Errorf("relay %s = %q, %v; want %q…", tt.input, res.Output, err, tt.want)
				}
			}
			// Without a host, a call fails in the tool, which carries on.
			res, err := r.Run(context.Background(), sandbox.Call{Tool: "relay_adder", Source: []byte(relay("adder")), Input: []byte(`{}`)})
			if err != nil || !strings.Contains(res.Output, "calling other tools is not available here") {
				t.Errorf("relay without a host = %q, %v", res.Output, err)
			}
		})
	}
}

// TestNestedCallBoundedByCaller: a callee that ignores its context is
// stopped when its caller's limit is spent, and the caller's limit, not the
// callee's, decides; a cancelled caller cancels its callee.
func TestNestedCallBoundedByCaller(t *testing.T) {
	opts := testOptions(t)
	opts.CallTimeout = 10 * time.Second
	for name, r := range runners(t, opts) {
		t.Run(name, func(t *testing.T) {
			h := newHost(r, nestedTools())
			began := time.Now()
			res, err := r.Run(toolkit.WithCaller(context.Background(), h), sandbox.Call{Tool: "relay_deaf", Source: []byte(relay("deaf")),
				Input: []byte(`{}`), Timeout: 700 * time.Millisecond})
			took := time.Since(began)
			if took > 5*time.Second {
				t.Fatalf("the call took %v: the callee ran past its caller's limit", took)
			}
			if err == nil && !strings.Contains(res.Output, "time limit") && !strings.Contains(res.Output, "deadline") {
				t.Errorf("relay of a deaf callee = %q; want a timeout", res.Output)
			}
			if err != nil && adaptbot.FailureOf(err) != adaptbot.FailTimeout {
				t.Errorf("relay of a deaf callee failed with %v; want a timeout", err)
			}
			// The callee ran out of its caller's time: it timed out, or was
			// cancelled as its caller gave up, whichever came first.
			poll.Until(t, "the callee's failure", func() bool { return len(h.errsOf("deaf")) == 1 })
			if e := h.errsOf("deaf")[0]; adaptbot.FailureOf(e) != adaptbot.FailTimeout && !errors.Is(e, context.Canceled) && !errors.Is(e, context.DeadlineExceeded) {
				t.Errorf("the deaf callee ended with %v, want a timeout or a cancellation", e)
			}

			ctx, cancel := context.WithCancel(context.Background())
			type outcome struct {
				out string
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := h.call(ctx, "relay_patient", `{}`)
				done <- outcome{res.Output, err}
			}()
			poll.Until(t, "the callee to start", func() bool { return h.calls.Load() == 2 })
			cancel()
			select {
			case o := <-done:
				// The relay reports its callee's error as its output, if
				// it gets to return before its own cancellation ends it.
				if !errors.Is(o.err, context.Canceled) && !strings.Contains(o.out, "context canceled") {
					t.Errorf("the cancelled caller returned %q, %v", o.out, o.err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the cancelled caller did not return")
			}
			poll.Until(t, "the callee's end", func() bool { return len(h.errsOf("patient")) == 1 })
			if e := h.errsOf("patient")[0]; e == nil {
				t.Error("the callee of a cancelled caller finished as if nothing happened")
			}
		})
	}
}

// TestNestedCallsNeverDeadlock fills pools of one and two workers with
// callers, each waiting for callees (a chain of four, so three nested calls
// deep), and checks that every call finishes: the callees get workers
// beyond the pool while their callers wait, and those extra workers go
// away again.
func TestNestedCallsNeverDeadlock(t *testing.T) {
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprint("pool of ", size), func(t *testing.T) {
			opts := testOptions(t)
			opts.PoolSize = size
			opts.CallTimeout = 10 * time.Second
			opts.QueueTimeout = 8 * time.Second // a deadlock shows as "no worker was free"
			p := newPool(t, opts)
			h := newHost(p, nestedTools())
			callers := 3 * size
			var wg sync.WaitGroup
			errs := make([]error, callers)
			outs := make([]string, callers)
			for i := range callers {
				wg.Go(func() {
					tool, input := "hop1", `{}`
					if i%2 == 1 {
						tool, input = "doubler", `{"a": 1, "b": 2}`
					}
					res, err := h.call(context.Background(), tool, input)
					outs[i], errs[i] = res.Output, err
				})
			}
			wg.Wait()
			for i, err := range errs {
				want := "hop1>hop2>hop3>bottom"
				if i%2 == 1 {
					want = `doubled: {"sum":6}`
				}
				if err != nil || outs[i] != want {
					t.Errorf("caller %d = %q, %v; want %q", i, outs[i], err, want)
				}
			}
			st := waitFull(t, p)
			if st.Extra > size {
				t.Errorf("%d extra workers wait after the calls; at most the pool's size, %d, may", st.Extra, size)
			}
		})
	}
}
