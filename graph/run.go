package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"time"
)

// DefaultMaxSteps is the number of node runs allowed per Run unless
// WithMaxSteps says otherwise.
const DefaultMaxSteps = 25

// ErrStepLimit is wrapped by the error Run returns when a run would exceed
// its step limit, which usually means a loop that never exits.
var ErrStepLimit = errors.New("graph: step limit exceeded")

// Compiled is a checked, frozen graph, produced by Graph.Compile. It is safe
// for concurrent use: every Run keeps its own state, trace and options.
type Compiled[S any] struct {
	nodes  map[string]NodeFunc[S]
	routes map[string]route[S] // by source key, Start included
	order  []string
}

// route is the single way out of a node: an edge (to) or a branch (choose).
type route[S any] struct {
	to      string
	choose  BranchFunc[S]
	targets []string
}

// Nodes returns the node keys in the order they were added, without Start
// and End.
func (c *Compiled[S]) Nodes() []string {
	return slices.Clone(c.order)
}

// RunOption changes one Run.
type RunOption func(*runConfig)

type runConfig struct {
	maxSteps int
	hook     func(Step)
}

// WithMaxSteps sets how many node runs one Run allows before it fails with
// ErrStepLimit. Values below 1 leave DefaultMaxSteps in place.
func WithMaxSteps(n int) RunOption {
	return func(c *runConfig) {
		if n > 0 {
			c.maxSteps = n
		}
	}
}

// WithStepHook calls hook after each node, with the same Step that is
// appended to the trace, for example to stream progress to a client. The
// hook runs on the goroutine calling Run, so it should return quickly.
func WithStepHook(hook func(Step)) RunOption {
	return func(c *runConfig) { c.hook = hook }
}

// Run passes s from Start through the graph to End and returns the final
// state and the trace of the nodes that ran.
//
// Run stops at the first error: a node or branch error (wrapped with the
// node's key, so errors.Is and errors.As still see the cause), a branch
// choosing an undeclared target, a recovered panic (a *PanicError), a
// cancelled ctx (checked before each node), or the step limit (ErrStepLimit).
// Even then it returns the trace so far, including the failing step, and the
// last state a node returned successfully (s itself if none did).
func (c *Compiled[S]) Run(ctx context.Context, s S, opts ...RunOption) (S, Trace, error) {
	cfg := runConfig{maxSteps: DefaultMaxSteps}
	for _, opt := range opts {
		opt(&cfg)
	}
	var trace Trace
	cur, err := c.next(ctx, Start, s)
	if err != nil {
		return s, trace, err
	}
	for steps := 0; cur != End; steps++ {
		if steps == cfg.maxSteps {
			return s, trace, fmt.Errorf("%w: %d steps ran without reaching End; next was node %q", ErrStepLimit, steps, cur)
		}
		if err := ctx.Err(); err != nil {
			return s, trace, fmt.Errorf("graph: before node %q: %w", cur, err)
		}
		began := time.Now()
		var next string
		res, err := c.call(ctx, cur, s)
		if err != nil {
			err = fmt.Errorf("graph: node %q: %w", cur, err)
		} else {
			s = res
			next, err = c.next(ctx, cur, s)
		}
		step := Step{Node: cur, Duration: time.Since(began)}
		if err != nil {
			step.Err = err.Error()
		}
		trace = append(trace, step)
		if cfg.hook != nil {
			cfg.hook(step)
		}
		if err != nil {
			return s, trace, err
		}
		cur = next
	}
	return s, trace, nil
}

// call runs one node, turning a panic into an error.
func (c *Compiled[S]) call(ctx context.Context, key string, s S) (res S, err error) {
	defer recoverInto(&err)
	return c.nodes[key](ctx, s)
}

// next follows the route out of from. Errors already name from.
func (c *Compiled[S]) next(ctx context.Context, from string, s S) (to string, err error) {
	r := c.routes[from]
	if r.choose == nil {
		return r.to, nil
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("graph: branch from %q: %w", from, err)
		}
	}()
	defer recoverInto(&err)
	to, err = r.choose(ctx, s)
	if err != nil {
		return "", err
	}
	if !slices.Contains(r.targets, to) {
		return "", fmt.Errorf("chose %q, which is not among the declared targets %q", to, r.targets)
	}
	return to, nil
}

// PanicError is the error Run returns, wrapped with the node's key, when a
// node or branch function panics, so that one bad request cannot bring down
// a server.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack, for logs
}

// Error reports the panic value; the stack is left to the caller's logs.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v", e.Value)
}

func recoverInto(err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Value: v, Stack: debug.Stack()}
	}
}

// Trace lists the nodes a run visited, in order.
type Trace []Step

// Step records one node run. Duration covers the node function and, when the
// node is followed by a branch, the branch's choice. Err is empty on success;
// otherwise it holds the same message as the error Run returned.
//
// A Step encodes to JSON as {"node":"classifier","ms":12.3} with an "error"
// field added only on failure.
type Step struct {
	Node     string
	Duration time.Duration
	Err      string
}

// Millis returns the step's duration in milliseconds, to the microsecond.
func (s Step) Millis() float64 {
	return float64(s.Duration.Microseconds()) / 1000
}

type stepJSON struct {
	Node string  `json:"node"`
	Ms   float64 `json:"ms"`
	Err  string  `json:"error,omitempty"`
}

// MarshalJSON encodes the step as {"node":...,"ms":...,"error":...}.
func (s Step) MarshalJSON() ([]byte, error) {
	return json.Marshal(stepJSON{Node: s.Node, Ms: s.Millis(), Err: s.Err})
}

// UnmarshalJSON decodes the form written by MarshalJSON.
func (s *Step) UnmarshalJSON(data []byte) error {
	var j stepJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Step{Node: j.Node, Duration: time.Duration(math.Round(j.Ms * float64(time.Millisecond))), Err: j.Err}
	return nil
}
