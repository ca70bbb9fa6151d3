package toolbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"adaptbot/contract"
	"adaptbot/egress"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/telemetry"
)

// Runner runs a local tool's source; every sandbox.Runner is one.
type Runner interface {
	Run(ctx context.Context, c sandbox.Call) (sandbox.Result, error)
}

// Local is one serving version of a registry tool, run in the sandbox.
// A failed run returns the sandbox's *sandbox.Error as is, so that callers
// can still tell its kind (adaptbot.FailureOf: a timeout, a crash, ...).
type Local struct {
	tool   registry.Tool
	runner Runner
	spec   Spec
	schema func() (*contract.Schema, error) // resolved at the first call
	output func() (*contract.Schema, error) // Spec.Output, resolved at the first result (output.go)
	set    *Set                             // the Set whose tool this is; nil for a Local on its own
}

// NewLocal returns the serving version t of a registry tool, whose calls
// run on runner.
func NewLocal(t registry.Tool, runner Runner) *Local {
	return &Local{tool: t, runner: runner, spec: t.Entry.Tool,
		schema: sync.OnceValues(func() (*contract.Schema, error) { return contract.CompileSchema(t.Parameters) }),
		output: outputSchema(t.Output)}
}

// Spec returns the tool's spec.
func (l *Local) Spec() Spec { return l.spec }

// Entry returns the tool's registry entry: what serves, and the state of
// its file on disk.
func (l *Local) Entry() registry.Entry { return l.tool.Entry }

// Code returns the source that runs.
func (l *Local) Code() []byte { return l.tool.Code }

// Call validates args against the tool's schema (an *ArgsError when they
// are not valid JSON or break it), runs this version in the sandbox, and
// checks a result against the tool's output schema, if it has one (a
// *sandbox.Error of kind output when it breaks it: output.go). A
// stored schema that does not compile is a plain error naming the tool and
// the schema: the arguments are not at fault.
//
// The tool may call other tools (toolkit.Call) when l is a Set's: the call
// is recorded in the request's call log and told to the Set's observers,
// with the calls it makes. A Local made on its own (NewLocal) runs alone.
func (l *Local) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if l.set == nil {
		return l.run(ctx, args)
	}
	return l.set.invoke(ctx, l.spec, args, l.run)
}

// run is one execution, in its execute_tool span (nested calls get theirs
// under it).
func (l *Local) run(ctx context.Context, args json.RawMessage) (out string, err error) {
	ctx, span := telemetry.StartTool(ctx, l.spec.Name, false, args)
	defer func() { span.End(out, outcome(err), err) }()
	schema, err := l.schema()
	if err != nil {
		// The registry checks every schema it accepts, so this is rare;
		// still, nothing runs that cannot be validated. It is the tool's
		// fault, not the arguments': no *ArgsError, since no arguments
		// could ever pass.
		return "", fmt.Errorf("tool %s: its parameter schema %.200s is broken, so no arguments can be validated: %w", l.spec.Name, l.spec.Parameters, err)
	}
	args, err = checkArgs(l.spec, schema, args)
	if err != nil {
		return "", err
	}
	// A call in a chain runs as a nested one: within what is left of its
	// caller's time, and beyond a full worker pool.
	nested := false
	if f := frameFrom(ctx); f != nil && f.depth > 0 {
		nested = true
	}
	// Its HTTP requests are its own: its declared hosts, its version for
	// approvals and trust, whoever is behind the request for secrets.
	var host *egress.Host
	if l.set != nil {
		host = l.set.egress.Load()
	}
	ctx = egress.Bind(ctx, host, egress.Tool{Name: l.tool.Name, Version: l.tool.Version, SHA256: l.tool.SHA256, Hosts: l.tool.Hosts})
	res, err := l.runner.Run(ctx, sandbox.Call{Tool: l.tool.Name, Source: l.tool.Code, Input: args, Timeout: l.tool.Timeout(), Nested: nested})
	l.noteTier(ctx, res.Tier)
	if err != nil {
		if _, ok := errors.AsType[*sandbox.Error](err); ok {
			return "", err // "tool NAME: KIND: what happened", with the limit it hit
		}
		return "", fmt.Errorf("tool %s failed: %w", l.tool.Name, err)
	}
	if err := checkOutput(l.spec, res.Output, l.output); err != nil {
		return "", err
	}
	return res.Output, nil
}

// noteTier records which tier ran the call (sandbox.Result.Tier; a runner
// without tiers has only the interpreter) on its span and in its entry of
// the request's call logs, whence the request's row takes it.
func (l *Local) noteTier(ctx context.Context, tier string) {
	if tier == "" {
		tier = sandbox.TierInterpreted
	}
	telemetry.ToolTier(ctx, tier)
	if l.set == nil {
		return // the frame in ctx, if any, is a caller's
	}
	if f := frameFrom(ctx); f != nil && f.call != nil {
		f.call.mu.Lock()
		f.call.tier = tier
		f.call.mu.Unlock()
	}
}

// current reports whether l is the registry's tool now.
func (l *Local) current(now registry.Tool) bool {
	e := l.tool.Entry
	return e.SHA256 == now.SHA256 && e.Version == now.Version && e.Status == now.Status &&
		e.LastError == now.LastError && e.UpdatedAt.Equal(now.UpdatedAt)
}

// same reports whether l and m are the same version of a tool as clients
// see it: a new version, even with the same spec, is a change.
func (l *Local) same(m *Local) bool {
	return l.tool.SHA256 == m.tool.SHA256 && l.tool.Version == m.tool.Version &&
		l.spec.Description == m.spec.Description && l.spec.Category == m.spec.Category &&
		l.spec.Origin == m.spec.Origin && string(l.spec.Parameters) == string(m.spec.Parameters) &&
		string(l.spec.Output) == string(m.spec.Output) && l.spec.Network == m.spec.Network &&
		slices.Equal(l.spec.Calls, m.spec.Calls) && l.spec.NoDirect == m.spec.NoDirect &&
		slices.Equal(l.spec.Hosts, m.spec.Hosts)
}

var _ Tool = (*Local)(nil)
