package generator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/graph"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/telemetry"
)

// Node keys of the build graph.
const (
	NodeDecide   = "decide"
	NodeCreate   = "create"
	NodeModify   = "modify"
	NodeCheck    = "check"
	NodeRepair   = "repair"
	NodeRegister = "register"
	NodeDelete   = "delete"
	NodeReject   = "reject"
)

// Stages of a build, the values of Event.Stage, in the order they happen.
const (
	StageDecide  = "decide"  // working out the operation and the tool's name
	StageWrite   = "write"   // the model writes the code (attempt 1)
	StageRepair  = "repair"  // the model repairs the code (attempt 2 and later)
	StageCheck   = "check"   // extract, parse, gofmt, contract
	StageCompile = "compile" // compile in the sandbox
	StageExample = "example" // run example n of m in the sandbox
	// StageDependents re-runs the examples of a tool that uses the tool
	// being changed, with the new version in its place.
	StageDependents = "dependents"
	StageRegister   = "register" // save the checked tool in the registry
	StageDelete     = "delete"   // remove the tool
	StageDone       = "done"     // the build succeeded; Message is the summary
	StageFailed     = "failed"   // the build failed; Message says why
)

// Defaults for Options left at zero.
const (
	DefaultMaxAttempts    = 3
	DefaultExampleTimeout = 5 * time.Second
)

// Options configures a Generator.
type Options struct {
	// Model writes the tools; nil makes every build that needs it fail with
	// llm.ErrNoModel (a delete named by Op and Tool needs none).
	Model llm.Model
	// Registry is where checked tools are saved; required.
	Registry *registry.Registry
	// Runner compiles candidates and runs their examples; required.
	Runner sandbox.Runner
	// MaxAttempts is how many times the model may write the code, the first
	// try included; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// ExampleTimeout caps one example's run; 0 means DefaultExampleTimeout.
	ExampleTimeout time.Duration
	// Log receives one line per build; nil discards.
	Log *slog.Logger
	// Tools runs the tools a tool calls (toolkit.Call) while the gate runs
	// its examples, and says which tools there are to call; nil runs
	// examples without it (a tool that calls another then fails) and knows
	// the registry's tools only. The toolbox's Set is what to give.
	Tools Tools
	// Finder shortlists the tools the model is shown to call from the tool
	// it writes (the router's feed); nil shows none but those a modified
	// tool calls already.
	Finder Finder
	// Claim, when set, is taken on a tool's name as soon as the build has
	// decided it, beside the generator's own lock, and released when the
	// build ends: in a cluster it is the lock that keeps two replicas from
	// building one name at once, whoever named the tool (the request or
	// the model).
	Claim func(ctx context.Context, name string) (release func(), err error)
	// Secrets lists the secrets the person behind a build can use (names
	// and hosts, never values): the write prompt shows them, and a built
	// tool that needs one the person lacks says so in its Result. nil
	// knows none, so every secret a tool names is reported missing.
	Secrets Secrets
}

// Generator builds, changes and deletes tools. It is safe for concurrent
// use: builds of different tools run in parallel, and a second build of a
// tool that is being built, here or in another process on the same tools
// folder (the server and the CLI), fails at once with ErrConflict.
type Generator struct {
	opts Options
	flow *graph.Compiled[*build]

	mu   sync.Mutex
	busy map[string]bool // tools with a build under way
}

// New checks opts and wires and compiles the build graph. This is the one
// place that says how a build travels:
//
//	decide ─┬─ create ─┐
//	        ├─ modify ─┼─ check ─┬─ register ── end
//	        │  repair ─┘    ↑    ├─ repair (back to check)
//	        ├─ delete ── end     └─ reject ── end
//	        └─ reject ── end
func New(o Options) (*Generator, error) {
	if o.Registry == nil {
		return nil, errors.New("generator: a Registry is required")
	}
	if o.Runner == nil {
		return nil, errors.New("generator: a sandbox Runner is required")
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.ExampleTimeout <= 0 {
		o.ExampleTimeout = DefaultExampleTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	gen := &Generator{opts: o, busy: map[string]bool{}}

	g := graph.New[*build]()
	g.AddNode(NodeDecide, gen.decide)
	g.AddNode(NodeCreate, gen.create)
	g.AddNode(NodeModify, gen.modify)
	g.AddNode(NodeCheck, gen.check)
	g.AddNode(NodeRepair, gen.repair)
	g.AddNode(NodeRegister, gen.register)
	g.AddNode(NodeDelete, gen.delete)
	g.AddNode(NodeReject, gen.reject)

	g.AddEdge(graph.Start, NodeDecide)
	g.AddBranch(NodeDecide, func(_ context.Context, b *build) (string, error) {
		if b.failure != "" {
			return NodeReject, nil
		}
		switch b.op {
		case Modify:
			return NodeModify, nil
		case Delete:
			return NodeDelete, nil
		}
		return NodeCreate, nil
	}, NodeCreate, NodeModify, NodeDelete, NodeReject)
	g.AddEdge(NodeCreate, NodeCheck)
	g.AddEdge(NodeModify, NodeCheck)
	g.AddEdge(NodeRepair, NodeCheck)
	g.AddBranch(NodeCheck, func(_ context.Context, b *build) (string, error) {
		switch {
		case b.verdict.tool != nil:
			return NodeRegister, nil
		case b.attempt < gen.opts.MaxAttempts:
			return NodeRepair, nil
		}
		return NodeReject, nil
	}, NodeRegister, NodeRepair, NodeReject)
	g.AddEdge(NodeRegister, graph.End)
	g.AddEdge(NodeDelete, graph.End)
	g.AddEdge(NodeReject, graph.End)

	flow, err := g.Compile()
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	gen.flow = flow
	return gen, nil
}

// build is one build's way through the graph; each Build gets a fresh one.
type build struct {
	req  Request
	emit func(Event)

	op      Op
	name    string
	summary string
	current registry.Tool // the serving version, for a modify
	task    string        // the create or modify instruction
	system  string        // the write prompt

	attempt int
	cand    candidate
	verdict verdict
	log     []Attempt

	// secrets are the caller's, read once (secretsRead), for the write
	// prompt and the result.
	secrets     []SecretInfo
	secretsRead bool

	entry   registry.Entry // what register or delete did
	failure string         // why the build was refused, for people
	// dependents are the last runs of the examples of the tools that use
	// the tool being modified; breaks says they failed on the last attempt.
	dependents []ExampleReport
	breaks     bool
	locked     bool
	release    func() // Options.Claim's, once taken
}

// Budget says how much work one build may take at most: model calls (the
// decision and one per attempt) and example runs (about two per attempt).
// Deadlines are derived from it.
func (g *Generator) Budget() (modelCalls, exampleRuns int) {
	return 1 + g.opts.MaxAttempts, 2 * g.opts.MaxAttempts
}

// Build runs one build: decide (unless req names Op and Tool), then write,
// check and repair up to MaxAttempts, then register; or delete. progress, if
// not nil, is called on the building goroutine as each stage starts.
//
// The Result is never nil. A build the gate or the decision refuses returns
// OK=false, a one- or two-sentence Error for people and the attempts in Log,
// with a nil error: nothing was written. The error is non-nil only when no
// verdict could be reached: ErrConflict (errors.Is) when the tool is already
// being built, llm.ErrNoModel without a model, a model or registry failure,
// or a cancelled ctx. Result.Error is set then too, for the benchmarks row.
func (g *Generator) Build(ctx context.Context, req Request, progress func(Event)) (*Result, error) {
	began := time.Now()
	ctx, span := telemetry.StartBuild(ctx, string(req.Op), req.Tool)
	b := &build{req: req, op: req.Op, name: req.Tool}
	b.emit = func(ev Event) {
		if ev.Tool == "" {
			ev.Tool = b.name
		}
		if progress != nil {
			progress(ev)
		}
	}
	defer func() {
		if b.release != nil {
			b.release()
		}
		if b.locked {
			g.unlock(b.name)
		}
	}()

	var err error
	if g.opts.Model == nil && !(req.Op == Delete && req.Tool != "") {
		err = llm.ErrNoModel
	} else {
		_, _, err = g.flow.Run(ctx, b, graph.WithMaxSteps(2*g.opts.MaxAttempts+4))
	}

	res := &Result{Op: b.op, Tool: b.name, Attempts: b.attempt, Log: b.log, Version: b.entry.Version, Duration: time.Since(began), Dependents: b.dependents}
	if b.entry.Status == registry.Pending {
		res.Version, res.Pending = b.entry.PendingVersion, true
	}
	switch {
	case err != nil:
		res.Error = failureFor(err, b.name)
	case b.failure != "":
		res.Error = b.failure
	default:
		res.OK = true
		res.Summary = successFor(b)
		if t := b.verdict.tool; t != nil && b.op != Delete {
			res.Hosts, res.Secrets = t.spec.Hosts, t.spec.Secrets
			res.MissingSecrets = g.missing(ctx, b, t)
			if hint := setSecretHint(b.name, res.MissingSecrets); hint != "" {
				res.Summary += " " + hint
			}
		}
	}
	if res.OK {
		b.emit(Event{Stage: StageDone, Message: res.Summary})
	} else {
		res.Summary = res.Error
		b.emit(Event{Stage: StageFailed, Message: res.Error})
	}
	span.End(string(res.Op), res.Tool, res.OK, res.Attempts, res.Error, err)
	g.opts.Log.Info("build", "op", res.Op, "tool", res.Tool, "ok", res.OK, "attempts", res.Attempts,
		"version", res.Version, "duration", res.Duration, "error", res.Error, "err", err)
	return res, err
}

// lock claims name for one build, or fails with ErrConflict if a build has
// it. Builds run in the server alone (the CLI asks the server), so a map is
// all the exclusion there is to keep.
func (g *Generator) lock(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy[name] {
		return &adaptbot.Error{Kind: adaptbot.Conflict, Err: fmt.Errorf("%w: %s", ErrConflict, name),
			Msg: "another build of this tool is already running; try again when it has finished"}
	}
	g.busy[name] = true
	return nil
}

func (g *Generator) unlock(name string) {
	g.mu.Lock()
	delete(g.busy, name)
	g.mu.Unlock()
}

// failureFor words an error that stopped a build, for people.
func failureFor(err error, name string) string {
	what := "the tool"
	if name != "" {
		what = name
	}
	switch {
	case errors.Is(err, ErrConflict):
		return fmt.Sprintf("Another build of %s is already running; try again when it has finished.", what)
	case errors.Is(err, llm.ErrNoModel):
		return "Building tools needs a language model, and none is configured: " + llm.ConfigureHint + "."
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("The build of %s was stopped before it finished; nothing was saved.", what)
	case errors.Is(err, registry.ErrInUse):
		var inUse *registry.InUseError
		errors.As(err, &inUse)
		return fmt.Sprintf("%s is not deleted: %s use it. Change them first, or delete it anyway (force), which leaves them broken.", what, strings.Join(inUse.Dependents, ", "))
	}
	return fmt.Sprintf("The build of %s stopped: %s. Nothing was saved.", what, clipText(strings.TrimSuffix(rootCause(err), ".")))
}

// rootCause drops the graph's "graph: node ...:" wrapping, which says where
// but means nothing to people.
func rootCause(err error) string {
	msg := err.Error()
	for strings.HasPrefix(msg, "graph: ") {
		_, rest, ok := strings.Cut(msg, `": `)
		if !ok {
			break
		}
		msg = rest
	}
	return msg
}

func successFor(b *build) string {
	if b.entry.Status == registry.Pending && b.breaks {
		return fmt.Sprintf("Wrote %s version %d. It passed its own checks but breaks the tools that use it: %s. It waits for approval before it serves (review is on): see the report on its page, /tools/%s.",
			b.name, b.entry.PendingVersion, brokenSummary(broken(b.dependents)), b.name)
	}
	if b.entry.Status == registry.Pending {
		return fmt.Sprintf("Wrote %s version %d: %s It passed its checks and waits for approval before it serves (review is on): approve it on its page, /tools/%s.",
			b.name, b.entry.PendingVersion, sentenceEnd(b.entry.Description), b.name)
	}
	switch b.op {
	case Delete:
		return fmt.Sprintf("Deleted %s. Its versions are kept in the history, so a rollback can restore it.", b.name)
	case Modify:
		return fmt.Sprintf("Updated %s to version %d: %s The previous version is kept and can be restored.",
			b.name, b.entry.Version, sentenceEnd(b.entry.Description))
	}
	return fmt.Sprintf("Created %s (version %d): %s It passed all %d of its examples.",
		b.name, b.entry.Version, sentenceEnd(b.entry.Description), len(b.verdict.tool.examples))
}

func sentenceEnd(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
