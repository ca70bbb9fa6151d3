package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/registry"
	"adaptbot/toolbox"
)

// Tools build on tools: a tool may call others (toolkit.Call). The
// generator shows the model the tools it may call (the router's shortlist
// for the request), refuses a candidate that calls a tool that does not
// exist or would close a cycle, runs a candidate's examples with the real
// callees, and holds a change of a tool — a modify or a rollback — to the
// examples of every tool that uses it, directly or through others, before
// the change serves.

// Tools is what the generator needs of the toolbox to run tools that call
// tools; *toolbox.Set is one.
type Tools interface {
	// Calling returns ctx for running the source of the tool name outside
	// the toolbox, its calls served by the toolbox, with overrides in place
	// of the registry's versions of their tools.
	Calling(ctx context.Context, name string, overrides ...registry.Tool) context.Context
	// Callee finds the tool a toolkit.Call names.
	Callee(name string) (toolbox.Tool, bool)
}

var _ Tools = (*toolbox.Set)(nil)

// Finder shortlists the tools that fit a request, best first; the router's
// feed is one.
type Finder interface {
	Find(ctx context.Context, query string, k int) []string
}

// maxCallable is how many tools the write prompt offers to call.
const maxCallable = 8

// callable is a tool the model may call from the tool it writes, as the
// write prompt shows it.
type callable struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// callables are the tools the tool name may call, for the write prompt:
// the Finder's shortlist for the request and, for a modify, the tools it
// calls already; never name itself or a tool that uses it (a cycle).
func (g *Generator) callables(ctx context.Context, name, request string, current []string) []callable {
	names := slices.Clone(current)
	if g.opts.Finder != nil {
		names = append(names, g.opts.Finder.Find(ctx, request, maxCallable)...)
	}
	users := g.opts.Registry.Dependents(name)
	var out []callable
	seen := map[string]bool{}
	for _, n := range names {
		if n == name || seen[n] || slices.Contains(users, n) || len(out) == maxCallable {
			continue
		}
		seen[n] = true
		if c, ok := g.lookup(n); ok {
			out = append(out, c)
		}
	}
	return out
}

// lookup describes the tool a call names, through the toolbox when the
// generator has one, else the registry's serving tools.
func (g *Generator) lookup(name string) (callable, bool) {
	if g.opts.Tools != nil {
		t, ok := g.opts.Tools.Callee(name)
		if !ok {
			return callable{}, false
		}
		s := t.Spec()
		call := s.Name
		if s.Remote() {
			call = toolbox.FunctionName(s.Name) // how a tool names it: server__tool
		}
		return callable{Name: call, Description: s.Description, Parameters: s.Parameters}, true
	}
	t, ok := g.opts.Registry.Tool(name)
	if !ok {
		return callable{}, false
	}
	return callable{Name: t.Name, Description: t.Description, Parameters: t.Parameters}, true
}

// callProblems are the gate's findings on the tools a candidate calls,
// beyond the contract's (names it cannot know before running, which
// contract.Parse reports): tools that do not exist, and calls of a tool
// that uses it (a cycle).
func (g *Generator) callProblems(name string, src []byte) []string {
	problems := contract.MissingCallees(name, src, func(tool string) bool {
		_, ok := g.lookup(tool)
		return ok
	})
	users := g.opts.Registry.Dependents(name)
	sites, _ := contract.CallSites(name, src)
	for _, s := range sites {
		if slices.Contains(users, s.Tool) {
			problems = append(problems, fmt.Sprintf("%s: calls %s, which uses %s: a cycle; a tool may not call a tool that uses it", s.Pos, s.Tool, name))
		}
	}
	return problems
}

// calling is the context the examples of the tool name run in: its calls go
// to the real tools, overrides in place of theirs.
func (g *Generator) calling(ctx context.Context, name string, overrides ...registry.Tool) context.Context {
	if g.opts.Tools == nil {
		return ctx
	}
	return g.opts.Tools.Calling(ctx, name, overrides...)
}

// checkDependents runs the stored examples of every tool that uses name,
// directly or through others, with src (which passed its own checks as
// spec) serving as name. It returns a report per dependent; one without
// examples is reported as not checked. The error is for a cancelled check
// or an unavailable sandbox.
func (g *Generator) checkDependents(ctx context.Context, name string, src []byte, spec *contract.Spec, emit func(Event)) ([]ExampleReport, error) {
	deps := g.opts.Registry.Dependents(name)
	if len(deps) == 0 {
		return nil, nil
	}
	cand, _ := g.opts.Registry.Tool(name)
	if sha := adaptbot.Digest(src); sha != cand.SHA256 {
		cand.Name, cand.Code, cand.SHA256, cand.Version = name, src, sha, 0 // a candidate: no version yet
	}
	if spec != nil {
		cand.Parameters, cand.TimeoutMS = spec.Parameters, spec.Timeout.Milliseconds()
	}
	var out []ExampleReport
	for _, d := range deps {
		emit(Event{Stage: StageDependents, Message: fmt.Sprintf("re-running the examples of %s, which uses %s", d, name)})
		t, ok := g.opts.Registry.Tool(d)
		if !ok {
			continue
		}
		rep := ExampleReport{Tool: d, Version: t.Version, OK: true}
		var examples []Example
		if raw := g.opts.Registry.Examples(d); raw == nil || json.Unmarshal(raw, &examples) != nil || len(examples) == 0 {
			rep.Skipped = "it has no stored examples to run"
			out = append(out, rep)
			continue
		}
		results, _, err := g.runExamples(ctx, d, t.Code, t.Output, examples, func(Event) {}, cand)
		if err != nil {
			return out, err
		}
		rep.Results = results
		for _, r := range results {
			rep.OK = rep.OK && r.OK
		}
		out = append(out, rep)
	}
	return out, nil
}

// broken returns the reports of dependents whose examples failed.
func broken(reports []ExampleReport) []ExampleReport {
	var out []ExampleReport
	for _, r := range reports {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// brokenSummary says which dependents fail and why, one clause each:
// "trip_time (example 1 of 2 …: the output … does not contain …)".
func brokenSummary(failed []ExampleReport) string {
	var parts []string
	for _, r := range failed {
		why := "its examples fail"
		if f := r.Failures(); len(f) > 0 {
			why = forPeople(f[0])
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Tool, why))
	}
	return strings.Join(parts, "; ")
}

// dependentProblems words the failures of the tools that use name for the
// model, so a repair can keep what they rely on.
func dependentProblems(name string, failed []ExampleReport) []string {
	var out []string
	for _, r := range failed {
		for _, f := range r.Failures() {
			out = append(out, fmt.Sprintf("the change breaks %s, a tool that calls %s: %s; keep what %s relies on (its inputs and the shape of its output)", r.Tool, name, f, r.Tool))
		}
	}
	return out
}

// Rollback makes version v of name serve again, as a new version, once the
// examples of every tool that uses name pass with it. If one fails, v does
// not serve: the Result (OK false) names the tools that failed and why; with
// review on (ADAPTBOT_REVIEW) it waits as pending instead, and the tool's
// warning (registry.Entry.Warning) carries that report. The error is for
// what stopped the rollback before a verdict: an unknown version
// (registry.ErrNotFound), a build of the tool under way (ErrConflict), a
// cancelled context, or the registry refusing the version.
func (g *Generator) Rollback(ctx context.Context, name string, v int) (*Result, error) {
	if err := contract.ValidName(name); err != nil {
		return nil, err
	}
	src, err := g.opts.Registry.VersionSource(name, v)
	if err != nil {
		return nil, err
	}
	if err := g.lock(name); err != nil {
		return nil, err
	}
	defer g.unlock(name)
	spec, _ := contract.Parse(name, src) // the registry's check says what is wrong
	reports, err := g.checkDependents(ctx, name, src, spec, func(Event) {})
	if err != nil {
		return nil, err
	}
	res := &Result{Op: Rollback, Tool: name, Dependents: reports}
	failed := broken(reports)
	review := g.opts.Registry.Review()
	if len(failed) > 0 && !review {
		cur, _ := g.opts.Registry.Entry(name)
		res.Error = fmt.Sprintf("Rolling %s back to version %d would break the tools that use it: %s. Nothing was changed: version %d keeps serving.",
			name, v, brokenSummary(failed), cur.Version)
		res.Summary = res.Error
		return res, nil
	}
	var e registry.Entry
	if len(failed) > 0 {
		e, err = g.opts.Registry.RollbackPending(ctx, name, v)
	} else {
		e, err = g.opts.Registry.Rollback(ctx, name, v)
	}
	if err != nil {
		return nil, err
	}
	res.OK, res.Version = true, e.Version
	res.Summary = fmt.Sprintf("Rolled %s back to version %d, now serving as version %d.", name, v, e.Version)
	if e.Status == registry.Pending {
		res.Version, res.Pending = e.PendingVersion, true
		warning := fmt.Sprintf("version %d (version %d rolled back, waiting for approval) breaks the tools that use it: %s", e.PendingVersion, v, brokenSummary(failed))
		if err := g.opts.Registry.SetWarning(name, warning); err != nil {
			g.opts.Log.Warn("generator: warning not kept", "tool", name, "err", err)
		}
		res.Summary = fmt.Sprintf("Version %d of %s is back as version %d, waiting for approval: it breaks the tools that use it: %s.", v, name, e.PendingVersion, brokenSummary(failed))
	}
	return res, nil
}
