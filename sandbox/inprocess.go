package sandbox

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
//
// A burst of calls of one tool version does not load an interpreter per
// call: at most PoolSize load at once, and a call waiting for its turn
// takes the first interpreter another call puts back.
type InProcess struct {
	opts   Options
	client *toolkit.Client
	specs  specCache

	mu     sync.Mutex
	closed bool
	idle   map[string][]*program // loaded interpreters not in use, by hash
	order  []string              // hashes in idle, oldest first
	loads  map[string]*loadGate  // hashes some call is loading or waiting for

	loaded atomic.Int64 // interpreters loaded so far
}

// loadGate bounds the loads of one tool version.
type loadGate struct {
	slots chan struct{} // one per load in progress
	put   chan struct{} // closed when an interpreter of the version is put back
	users int           // calls holding or waiting for a slot
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
		loads:  map[string]*loadGate{},
	}
}

// Compile loads the tool and keeps its interpreter for the next call.
func (r *InProcess) Compile(ctx context.Context, tool string, source []byte) (err error) {
	ctx, span := telemetry.StartSandbox(ctx, opCompile, tool)
	defer func() { span.End(string(adaptbot.FailureOf(err)), err) }()
	_, err = r.do(ctx, Call{Tool: tool, Source: source}, false)
	return err
}

// Run calls the tool.
func (r *InProcess) Run(ctx context.Context, c Call) (_ Result, err error) {
	ctx, span := telemetry.StartSandbox(ctx, opCall, c.Tool)
	defer func() { span.End(string(adaptbot.FailureOf(err)), err) }()
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
	spec, err := r.specs.check(hash, c.Tool, c.Source)
	if err != nil {
		return Result{}, err
	}
	limit := callTimeout(r.opts.CallTimeout, spec.timeout, c.Timeout)
	if c.Nested {
		if limit, err = nestedLimit(ctx, c.Tool, limit); err != nil {
			return Result{}, err
		}
	}
	caller := ctx
	ctx, clk, cancel := withClock(ctx, limit)
	defer cancel()

	p, err := r.get(ctx, c, hash, limit)
	if err != nil {
		if adaptbot.FailureOf(err) == adaptbot.FailTimeout && caller.Err() != nil {
			return Result{}, fmt.Errorf("tool %s: %w", c.Tool, caller.Err())
		}
		return Result{}, err
	}
	if !run {
		r.put(hash, p)
		return Result{}, nil
	}
	// Its requests go to the Sender of the caller's context (the
	// toolbox's), or GET and HEAD only through the runner's client; while
	// one waits for a person, the call's clock stops, and its callers'.
	if toolkit.SenderFrom(ctx) == nil {
		ctx = toolkit.WithSender(ctx, toolkit.ReadOnly(r.client, spec.hosts))
	}
	up := ctx
	ctx = toolkit.WithPause(ctx, func() func() {
		resume, resumeCallers := clk.pause(), toolkit.Pause(up)
		return func() { resume(); resumeCallers() }
	})
	o, finished := p.execute(ctx, c.Input, r.opts.MaxOutput, cancelGrace, limit)
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

// get returns an idle interpreter for hash, or loads one when this call's
// turn to load comes first.
func (r *InProcess) get(ctx context.Context, c Call, hash string, limit time.Duration) (*program, error) {
	for {
		r.mu.Lock()
		if p := r.takeLocked(hash); p != nil {
			r.mu.Unlock()
			return p, nil
		}
		g := r.loads[hash]
		if g == nil {
			g = &loadGate{slots: make(chan struct{}, r.opts.PoolSize), put: make(chan struct{})}
			r.loads[hash] = g
		}
		g.users++
		put := g.put
		r.mu.Unlock()

		select {
		case g.slots <- struct{}{}:
			p, err := r.load(ctx, c, hash, limit)
			<-g.slots
			r.leave(hash, g)
			return p, err
		case <-put:
			r.leave(hash, g) // and look again
		case <-ctx.Done():
			r.leave(hash, g)
			return nil, loadError(ctx, c.Tool, limit, ctx.Err())
		}
	}
}

// load loads an interpreter for hash, unless one was put back while this
// call waited for its turn.
func (r *InProcess) load(ctx context.Context, c Call, hash string, limit time.Duration) (*program, error) {
	if p := r.take(hash); p != nil {
		return p, nil
	}
	r.loaded.Add(1)
	return load(ctx, c.Tool, c.Source, limit, newLineLog(r.opts.Log, "sandbox: tool output", "tool", c.Tool))
}

func (r *InProcess) leave(hash string, g *loadGate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g.users--; g.users == 0 && r.loads[hash] == g {
		delete(r.loads, hash)
	}
}

// take returns an idle interpreter for hash, or nil.
func (r *InProcess) take(hash string) *program {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.takeLocked(hash)
}

func (r *InProcess) takeLocked(hash string) *program {
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
		if g := r.loads[hash]; g != nil {
			close(g.put)
			g.put = make(chan struct{})
		}
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
