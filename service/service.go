package service

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/approval"
	"adaptbot/benchmarks"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/native"
	"adaptbot/registry"
	"adaptbot/reqid"
	"adaptbot/secrets"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// Rows receives the one benchmark row of each request; *benchmarks.Logger
// is one.
type Rows interface {
	Log(benchmarks.Row) error
}

// Traces keeps each request's record; *traces.Store is one.
type Traces interface {
	Add(traces.Record) error
	Get(id string) (traces.Record, error)
	Recent(n int) []traces.Record
}

// Cluster guards changes in a cluster: Writable refuses them while NATS is
// away, and Lock takes the cluster-wide lock on a tool's name. On files
// alone there is none (nil).
type Cluster interface {
	Writable() error
	Lock(ctx context.Context, name string) (release func(), err error)
}

// Metrics counts requests for an operator; *telemetry.Metrics is one.
// Every method must be cheap and safe for concurrent use. Tool calls and
// model calls are counted where they happen (toolbox, the model wrapper).
type Metrics interface {
	Request(door, intent, path, outcome string, d time.Duration)
	Build(action, outcome string, d time.Duration)
}

// Deps are what the service carries requests out with. Agent, Generator,
// Rows, Traces, Cluster and Metrics may be nil: then chats, builds, rows,
// traces, cluster guards or metrics are left out (the command line's
// read-only commands, some tests).
type Deps struct {
	Agent     *agent.Agent
	Tools     toolbox.Box
	Registry  *registry.Registry
	Generator *generator.Generator
	Rows      Rows
	Traces    Traces
	Cluster   Cluster
	Metrics   Metrics
	Log       *slog.Logger
	// ToolTimeout is one tool call's limit in the sandbox
	// (ADAPTBOT_TOOL_TIMEOUT); the deadlines allow for it.
	ToolTimeout time.Duration
	// Deadlines, when set, replace the bounds the service derives from the
	// agent, the generator, the model and ToolTimeout (tests).
	Deadlines Deadlines
	// Review says that new versions wait for approval (ADAPTBOT_REVIEW).
	Review bool
	// Learning is what the service learns from use: failure cases and
	// automatic repairs (learning.go). Zero records nothing.
	Learning Learning
	// Tiers says which tier of the sandbox runs a tool version, and why not
	// the native one (package native); nil says nothing.
	Tiers Tiers
	// Users are the people the server knows (users.go); nil: none kept.
	Users Users
	// Stats are the benchmark aggregates (stats.go); nil: none yet.
	Stats Stats
	// Sandbox and Remote are the runner and the hub of external MCP
	// servers, for Health and the tools page (health.go); either may be nil.
	Sandbox Sandbox
	Remote  Remote
	// Model checks the chat model's reachability, for /healthz; nil: no
	// check runs here.
	Model ModelCheck
	// Secrets keeps the secrets tools' requests carry and the admins'
	// trusts (acting.go); nil: this server keeps none.
	Secrets *secrets.Store
	// ApprovalTimeout is how long a tool's request waits for its person's
	// approval (ADAPTBOT_APPROVAL_TIMEOUT); 0 is approval.DefaultTimeout.
	ApprovalTimeout time.Duration
}

// Tiers is the native tier as the service asks it.
type Tiers interface {
	Status(tool string, code []byte) native.Status
}

// callObserver hears of every tool call; *toolbox.Set is one.
type callObserver interface {
	OnCall(fn func(ctx context.Context, ev toolbox.CallEvent))
}

// Service carries out requests. It is safe for concurrent use.
type Service struct {
	d         Deps
	learn     *learning
	approvals *approval.Broker
}

// New returns the service over d.
func New(d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Deadlines == (Deadlines{}) {
		d.Deadlines = deadlines(d)
	}
	d.Deadlines = d.Deadlines.orDefaults()
	s := &Service{d: d, learn: newLearning(d.Learning)}
	s.approvals = approval.New(approval.Options{Timeout: d.ApprovalTimeout, OnDecision: s.decided, Log: d.Log})
	if o, ok := d.Tools.(callObserver); ok {
		o.OnCall(s.observeCall) // failure cases, from every door and depth
	}
	return s
}

// op is one request under way: it owns the request's row, trace and span,
// and writes each exactly once, in finish.
type op struct {
	s     *Service
	ctx   context.Context
	id    string
	who   identity.Identity
	door  string
	began time.Time
	// span is the operation's; a chat has agent instead, its invoke_agent.
	span  telemetry.Span
	agent *telemetry.AgentSpan
	row   benchmarks.Row
	rec   traces.Record
	// deadline is the work's bound, for the words of a timeout.
	deadline time.Duration
	// fallback is the kind of an error of no known sort (see classify).
	fallback adaptbot.Kind
	// what names the work for people ("Chat", "Building tools"), in the
	// words of a refusal for want of a model.
	what string
	// quiet ops (reads) write no row and no trace.
	quiet bool
	// category, when set, is a build row's category in place of
	// "build_<op>" (a proposed skill's build_skill).
	category string
	// calls records every tool call the request makes, by any path, for
	// the row's tier column.
	calls *toolbox.CallLog
	// asks records what its tools' requests asked of people (approvals.go).
	asks *askLog
}

// start begins an operation: it stamps the request ID (keeping one the
// context already carries), opens the span (named for the operation and the
// tool it is about: "run calculator"; a chat's is invoke_agent) and checks
// that the caller may take action. A refusal is returned as the operation's
// error; finish must still be called, so that the refusal has its row.
func (s *Service) start(ctx context.Context, operation, tool string, action identity.Action) (context.Context, *op, error) {
	id := reqid.From(ctx)
	if id == "" {
		id = reqid.New()
		ctx = reqid.With(ctx, id)
	}
	o := &op{s: s, id: id, who: identity.From(ctx), door: reqid.DoorOf(ctx), began: time.Now()}
	if operation == "chat" {
		var a telemetry.AgentSpan
		ctx, a = telemetry.StartAgent(ctx, telemetry.AgentStart{RequestID: id, Door: o.door, Model: s.model()})
		o.agent = &a
	} else {
		ctx, o.span = telemetry.StartOperation(ctx, operation, tool, id, o.door)
	}
	ctx, o.calls = toolbox.WithCallLog(ctx)
	ctx, o.asks = asking(ctx, "request:"+id)
	o.ctx = ctx
	o.row = benchmarks.Row{RequestID: id}
	o.rec = traces.Record{ID: id}
	return ctx, o, identity.Permit(o.who, action)
}

// finish ends the operation with err (nil on success): it writes the row
// and the trace, ends the span and counts the request, then returns err as
// an *Error carrying the request ID (nil stays nil).
func (o *op) finish(err error) error {
	e := o.classify(err)
	elapsed := time.Since(o.began)
	if !o.quiet {
		r := o.row
		r.Latency, r.Door, r.User = elapsed, o.door, o.who.Pseudonym
		r.Tier = benchmarks.TierOf(o.calls.Tiers())
		if e != nil {
			r.ErrorKind = string(e.Kind)
			if r.Error == "" {
				r.Error = e.Msg
			}
		}
		if o.s.d.Rows != nil {
			if lerr := o.s.d.Rows.Log(r); lerr != nil {
				o.s.d.Log.Error("benchmarks: row not written", "err", lerr, "request_id", o.id)
			}
		}
		if o.s.d.Traces != nil {
			rec := o.rec
			rec.Time, rec.Door, rec.User = time.Now().UTC(), o.door, o.who.Pseudonym
			if e != nil && rec.Error == "" {
				rec.Error = e.Msg
			}
			if terr := o.s.d.Traces.Add(rec); terr != nil {
				o.s.d.Log.Error("traces: record not stored", "err", terr, "request_id", o.id)
			}
		}
		if m := o.s.d.Metrics; m != nil {
			m.Request(o.door, r.Intent, r.Category, outcome(e), elapsed)
			if r.Intent == adaptbot.IntentBuild {
				m.Build(strings.TrimPrefix(r.Category, "build_"), outcome(e), elapsed)
			}
		}
	}
	var kind string
	var cause error
	if e != nil {
		kind, cause = string(e.Kind), e
		if e.Kind == adaptbot.Cancelled {
			o.s.d.Log.Info("request abandoned by its client", "request_id", o.id)
		}
	}
	if o.agent != nil {
		r := o.row
		o.agent.End(telemetry.AgentEnd{Intent: r.Intent, Path: r.Category, LLMCalls: r.LLMCalls,
			InputTokens: r.PromptTokens, OutputTokens: r.CompletionTokens, ErrorKind: kind, Err: cause})
	} else {
		o.span.End(kind, cause)
	}
	if e == nil {
		return nil
	}
	return e
}

// outcome names how a request ended, for metrics: ok, or its kind.
func outcome(e *adaptbot.Error) string {
	if e == nil {
		return "ok"
	}
	return string(e.Kind)
}

// model is the chat model, for the spans; nil without one.
func (s *Service) model() llm.Model {
	if s.d.Agent == nil {
		return nil
	}
	return s.d.Agent.Model()
}

// classify turns err into an *Error with the request's ID.
func (o *op) classify(err error) *adaptbot.Error {
	if err == nil {
		return nil
	}
	e := classify(err, o.deadline, o.fallback)
	if e.Kind == adaptbot.NotConfigured && o.what != "" && errors.Is(err, llm.ErrNoModel) {
		e = noModel(o.what, err)
	}
	e.RequestID = o.id
	if e.Kind == adaptbot.Upstream || e.Kind == adaptbot.Internal {
		o.s.d.Log.Warn("request failed", "request_id", o.id, "kind", e.Kind, "err", err)
	}
	return e
}

// read is a quiet operation: a read that checks permission and opens a
// span, but writes no row and no trace.
func (s *Service) read(ctx context.Context, operation string, action identity.Action) (context.Context, *op, error) {
	ctx, o, err := s.start(ctx, operation, "", action)
	o.quiet = true
	return ctx, o, err
}

// errNoGenerator is the error of a change asked of a service without one.
var errNoGenerator = &adaptbot.Error{Kind: adaptbot.Unavailable, Msg: "this server cannot build or change tools"}

// under returns a context with o's values (its request ID, span, call log
// and the caller's identity) and ctx's end: an operation begun by a
// Prepare method runs under the stream's context, which ends when the
// client goes away, not the handler's, which ends when it returns.
func (o *op) under(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(context.WithoutCancel(o.ctx))
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return c, func() {
		stop()
		cancel(context.Canceled)
	}
}

// prepared is an operation a Prepare method began: run carries it out
// under the operation's values and ends it (adaptbot.Prepared).
type prepared[T any] struct {
	o    *op
	run  func(ctx context.Context, s adaptbot.Stream) (T, error)
	once sync.Once
}

// Run carries the operation out under ctx's end, once.
func (p *prepared[T]) Run(ctx context.Context, s adaptbot.Stream) (res T, err error) {
	ran := false
	p.once.Do(func() {
		ran = true
		ctx, stop := p.o.under(ctx)
		defer stop()
		res, err = p.run(ctx, s)
	})
	if !ran {
		return res, adaptbot.Errorf(adaptbot.Internal, "request %s was already carried out", p.o.id)
	}
	return res, err
}

// prepare returns o, begun, as a Prepared that run carries out; when err
// refuses it, o ends at once with its row and the error is returned.
func prepare[T any](o *op, err error, run func(ctx context.Context, s adaptbot.Stream) (T, error)) (adaptbot.Prepared[T], error) {
	if err != nil {
		return nil, o.finish(err)
	}
	return &prepared[T]{o: o, run: run}, nil
}

// runNow carries out at once what a Prepare method began, under ctx.
func runNow[T any](ctx context.Context, s adaptbot.Stream, p adaptbot.Prepared[T], err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return p.Run(ctx, s)
}
