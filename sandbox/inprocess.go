package sandbox

import (
	"context"
	"fmt"
	"sync"

	"adaptbot"
	"adaptbot/telemetry"
	"adaptbot/toolkit"
)

// InProcess is the Runner of ModeInProcess: tools run in the calling
// process, each call in an interpreter of its own (interpreters are cached
// by source hash and never shared by two calls at once). It enforces the
// call timeout, the output cap and recovers panics; it cannot survive a
// fatal error in a tool (stack overflow, concurrent map write, out of
// memory, a panic in a goroutine the tool started), and code blocked outside
// the interpreter lingers after its timeout. Use it for development and
// tests; serve with the Pool.
type InProcess struct {
	opts   Options
	client *toolkit.Client
	specs  specCache

	mu     sync.Mutex
	closed bool
	idle   map[string][]*program // loaded interpreters not in use, by hash
	order  []string              // hashes in idle, oldest first
}

var _ Runner = (*InProcess)(nil)

// NewInProcess returns an in-process Runner.
func NewInProcess(opts Options) *InProcess {
	opts = opts.withDefaults()
	opts.Mode = ModeInProcess
	return &InProcess{
		opts:   opts,
		client: toolkit.NewClient(opts.Toolkit),
		idle:   map[string][]*program{},
	}
}

// Compile loads the tool and keeps its interpreter for the next call.
func (r *InProcess) Compile(ctx context.Context, tool string, source []byte) (err error) {
	ctx, span := telemetry.StartSandbox(ctx, opCompile, tool)
	defer func() { span.End(string(KindOf(err)), err) }()
	_, err = r.do(ctx, Call{Tool: tool, Source: source}, false)
	return err
}

// Run calls the tool.
func (r *InProcess) Run(ctx context.Context, c Call) (_ Result, err error) {
	ctx, span := telemetry.StartSandbox(ctx, opCall, c.Tool)
	defer func() { span.End(string(KindOf(err)), err) }()
	return r.do(ctx, c, true)
}

func (r *InProcess) do(ctx context.Context, c Call, run bool) (Result, error) {
	if r.isClosed() {
		return Result{}, &Error{Tool: c.Tool, Kind: adaptbot.FailUnavailable, Msg: "the sandbox is closed"}
	}
	if err := checkInput(c.Tool, c.Input); err != nil {
		return Result{}, err
	}
	hash := sourceHash(c.Tool, c.Source)
	toolLimit, err := r.specs.check(hash, c.Tool, c.Source)
	if err != nil {
		return Result{}, err
	}
	limit := callTimeout(r.opts.CallTimeout, toolLimit, c.Timeout)
	if c.Nested {
		if limit, err = nestedLimit(ctx, c.Tool, limit); err != nil {
			return Result{}, err
		}
	}
	caller := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errCallTimeout)
	defer cancel()

	p := r.take(hash)
	if p == nil {
		out := newLineLog(r.opts.Log, "sandbox: tool output", "tool", c.Tool)
		if p, err = load(ctx, c.Tool, c.Source, limit, out); err != nil {
			if KindOf(err) == adaptbot.FailTimeout && caller.Err() != nil {
				return Result{}, fmt.Errorf("tool %s: %w", c.Tool, caller.Err())
			}
			return Result{}, err
		}
	}
	if !run {
		r.put(hash, p)
		return Result{}, nil
	}
	o, finished := p.execute(toolkit.WithClient(ctx, r.client), c.Input, r.opts.MaxOutput, cancelGrace, limit)
	// An interpreter stopped, or left mid-statement by a panic, is dropped.
	if finished && o.Kind != adaptbot.FailPanic && o.Kind != adaptbot.FailTimeout {
		r.put(hash, p)
	}
	if o.Kind == adaptbot.FailTimeout && caller.Err() != nil {
		// The caller gave up first: its error, not the tool's.
		return Result{Duration: o.Duration}, fmt.Errorf("tool %s: %w", c.Tool, caller.Err())
	}
	return o.result(c.Tool)
}

// take returns an idle interpreter for hash, or nil.
func (r *InProcess) take(hash string) *program {
	r.mu.Lock()
	defer r.mu.Unlock()
	ps := r.idle[hash]
	if len(ps) == 0 {
		return nil
	}
	p := ps[len(ps)-1]
	r.idle[hash] = ps[:len(ps)-1]
	return p
}

// put keeps p for the next call, within the cache's bounds: CacheSize tool
// versions, PoolSize interpreters each.
func (r *InProcess) put(hash string, p *program) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	ps, ok := r.idle[hash]
	if !ok {
		if len(r.order) >= r.opts.CacheSize {
			delete(r.idle, r.order[0])
			r.order = r.order[1:]
		}
		r.order = append(r.order, hash)
	}
	if len(ps) < r.opts.PoolSize {
		r.idle[hash] = append(ps, p)
	}
}

func (r *InProcess) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Close drops the cached interpreters; later calls fail with
// adaptbot.FailUnavailable.
func (r *InProcess) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.idle = map[string][]*program{}
	r.order = nil
	return nil
}

// Stats describes the runner: in-process, it has no workers.
func (r *InProcess) Stats() Stats {
	return Stats{Mode: ModeInProcess, Confinement: "not confined: tools run in the server's process"}
}
