package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/registry"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// Run runs a tool directly, without a model: the page's run form, the API,
// the command line and a tool call over MCP (whose door the context names).
// The arguments are validated against the tool's schema first: bad ones are
// an Invalid error carrying the schema, the tool does not run, and no
// failure case is kept: the caller's mistake is not the tool's. A tool
// that fails is a Failed error with the sandbox's kind of failure.
func (s *Service) Run(ctx context.Context, name string, args json.RawMessage) (*adaptbot.RunResult, error) {
	args = bytes.TrimSpace(args)
	ctx, o, err := s.start(ctx, "run", name, identity.RunTool)
	o.fallback = adaptbot.Failed
	query := string(args)
	if query == "" {
		query = "{}"
	}
	o.row.Query, o.row.Intent, o.row.Category = query, adaptbot.IntentRun, name
	o.row.ParamExtraction, o.row.ToolExecution = benchmarks.NA, benchmarks.NA
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Run, string(args), name
	var t toolbox.Tool
	if err == nil {
		t, err = s.serving(name)
	}
	if err != nil {
		return nil, o.finish(err)
	}
	ctx, calls := toolbox.WithCallLog(context.WithValue(ctx, directRun{}, true))
	began := time.Now()
	out, err := t.Call(ctx, args)
	elapsed := time.Since(began)
	nested := calls.Nested()
	if _, invalid := errors.AsType[*toolbox.ArgsError](err); !invalid {
		o.row.ToolExecution = benchmarks.TriOf(err == nil)
		o.row.Tools = []string{name}
		for _, c := range nested {
			o.row.Tools = append(o.row.Tools, c.Tool)
		}
	}
	res := &adaptbot.RunResult{Tool: name, Version: t.Spec().Version, Output: out, Ms: traces.Millis(elapsed), RequestID: o.id, Approvals: o.asks.records()}
	kept := runTrace{Tool: name, Ms: res.Ms, RequestID: o.id, Calls: nested, Approvals: res.Approvals}
	if json.Valid(args) {
		kept.Arguments = json.RawMessage(args)
	}
	if err == nil {
		kept.Output = clip.String(out, traces.MaxOutput)
	}
	o.rec.Result = marshal(kept)
	if err := o.finish(err); err != nil {
		if e, ok := errors.AsType[*adaptbot.Error](err); ok && e.Kind == adaptbot.Failed {
			e.Extra = merge(e.Extra, map[string]any{"tool": name, "ms": res.Ms, "request_id": o.id})
			if len(res.Approvals) > 0 {
				e.Extra["approvals"] = res.Approvals
			}
		}
		return nil, err
	}
	return res, nil
}

// directRun marks the context of a direct run, whose arguments a person
// (or their client) sent: the schema's refusal of them is the caller's
// mistake, not a failure case of the tool (observeCall).
type directRun struct{}

// runTrace is what a run's trace keeps as its result.
type runTrace struct {
	Tool      string          `json:"tool"`
	Ms        float64         `json:"ms"`
	RequestID string          `json:"request_id"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    string          `json:"output,omitempty"`
	// Calls are the tools it called, each with its arguments, output, time
	// and depth.
	Calls []toolbox.CallRecord `json:"calls,omitempty"`
	// Approvals are those its requests asked for, each with its outcome.
	Approvals []adaptbot.ApprovalRecord `json:"approvals,omitempty"`
}

// serving returns the tool named name that serves, local or external.
func (s *Service) serving(name string) (toolbox.Tool, error) {
	if t, ok := s.d.Tools.Tool(name); ok {
		return t, nil
	}
	if _, _, remote := toolbox.SplitName(name); !remote && s.d.Registry != nil {
		if err := validName(name); err != nil {
			return nil, err
		}
		if e, ok := s.d.Registry.Entry(name); ok {
			return nil, adaptbot.Errorf(adaptbot.Conflict, "tool %s has no working version: %s", name, e.LastError)
		}
	}
	return nil, &adaptbot.Error{Kind: adaptbot.NotFound, Msg: toolbox.NotFound(name).Error()}
}

// validName refuses a name no tool can have, as Invalid.
func validName(name string) error {
	if err := contract.ValidName(name); err != nil {
		return &adaptbot.Error{Kind: adaptbot.Invalid, Msg: err.Error()}
	}
	return nil
}

// entry returns the registry entry of the local tool name, or an *Error.
func (s *Service) entry(name string) (registry.Entry, error) {
	if err := validName(name); err != nil {
		return registry.Entry{}, err
	}
	e, ok := s.d.Registry.Entry(name)
	if !ok {
		return registry.Entry{}, &adaptbot.Error{Kind: adaptbot.NotFound, Msg: toolbox.NotFound(name).Error()}
	}
	return e, nil
}

// change begins an operation that changes tool name in the registry
// (rollback, approve): it needs action, a valid name, a writable cluster and
// the cluster-wide lock on the name, which the returned release gives back.
func (s *Service) change(ctx context.Context, span, name string, action identity.Action, category string) (context.Context, *op, func(), error) {
	ctx, o, err := s.start(ctx, span, name, action)
	o.fallback = adaptbot.Failed
	o.row = benchmarks.Row{RequestID: o.id, Query: span + " " + name, Intent: adaptbot.IntentBuild, Category: category,
		ParamExtraction: benchmarks.NA, ToolExecution: benchmarks.NA}
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Change, span+" "+name, name
	release := func() {}
	if err == nil {
		err = validName(name)
	}
	if err == nil {
		err = s.writable()
	}
	if err == nil {
		release, err = s.lock(ctx, name)
	}
	return ctx, o, release, err
}

// Delete removes a tool. Its versions stay in the history. A tool that
// other tools use is refused (Conflict, naming them) unless force, which
// deletes it anyway and leaves them broken, saying why. The generator takes
// the cluster lock on the name, as for any build.
func (s *Service) Delete(ctx context.Context, name string, force bool) (*generator.Result, error) {
	ctx, o, err := s.start(ctx, "delete", name, identity.Delete)
	o.fallback = adaptbot.Failed
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Change, "delete "+name, name
	if err == nil {
		_, err = s.entry(name)
	}
	if err == nil && s.d.Generator == nil {
		err = errNoGenerator
	}
	req := generator.Request{Op: generator.Delete, Tool: name, Text: "delete " + name, Force: force}
	o.row = buildRow(o.row, req, nil)
	if err != nil {
		return nil, o.finish(err)
	}
	res, err := s.build(ctx, req, nil)
	if err == nil && res != nil && !res.OK {
		err = &adaptbot.Error{Kind: adaptbot.Failed, Msg: res.Error}
	}
	if err := o.finishBuild(req, res, err); err != nil {
		return nil, err
	}
	return res, nil
}

// Rollback serves an old version of a tool again, as a new version, once
// the examples of every tool that uses it pass with it. If one fails, the
// version does not serve: the error (Failed) names the tools that failed,
// or with review on the version waits as pending with that report.
func (s *Service) Rollback(ctx context.Context, name string, req adaptbot.RollbackRequest) (*adaptbot.RollbackResult, error) {
	version := req.Version
	ctx, o, release, err := s.change(ctx, "rollback", name, identity.Delete, adaptbot.CategoryBuildRollback)
	defer release()
	o.row.Query = fmt.Sprintf("rollback %s to version %d", name, version)
	if err == nil && version <= 0 {
		err = adaptbot.Errorf(adaptbot.Invalid, `"version" must be a version number ≥ 1; GET /api/tools/%s/versions lists them`, name)
	}
	if err == nil && s.d.Generator == nil {
		err = errNoGenerator
	}
	var res *generator.Result
	if err == nil {
		res, err = s.d.Generator.Rollback(ctx, name, version)
	}
	if res != nil {
		o.rec.Result = marshal(res)
		o.row.BuildAttempts = res.Attempts
		if err == nil && !res.OK {
			err = &adaptbot.Error{Kind: adaptbot.Failed, Msg: res.Error, Extra: map[string]any{"tool": name, "dependents": res.Dependents}}
		}
	}
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return &adaptbot.RollbackResult{Tool: res.Tool, Version: res.Version, Restored: version, Pending: res.Pending, Dependents: res.Dependents}, nil
}

// Approve makes a tool's pending version serve (ADAPTBOT_REVIEW=on).
func (s *Service) Approve(ctx context.Context, name string) (*adaptbot.ApproveResult, error) {
	ctx, o, release, err := s.change(ctx, "approve", name, identity.Delete, adaptbot.CategoryBuildApprove)
	defer release()
	if err == nil {
		_, err = s.entry(name)
	}
	var e registry.Entry
	if err == nil {
		e, err = s.d.Registry.Approve(ctx, name)
		if errors.Is(err, registry.ErrNotPending) {
			cur, _ := s.d.Registry.Entry(name)
			err = &adaptbot.Error{Kind: adaptbot.Conflict, Err: err, Msg: fmt.Sprintf("%s has no version waiting for approval (status %s, version %d serving)", name, cur.Status, cur.Version)}
		}
	}
	o.rec.Result = marshal(map[string]any{"tool": name, "version": e.Version, "status": e.Status})
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return &adaptbot.ApproveResult{Tool: e.Name, Version: e.Version, Status: e.Status}, nil
}

// Test re-runs a tool's stored examples; a failing example is not an error:
// the report says which and why.
func (s *Service) Test(ctx context.Context, name string) (*generator.ExampleReport, error) {
	ctx, o, err := s.start(ctx, "test", name, identity.Build)
	o.fallback, o.deadline = adaptbot.Failed, s.d.Deadlines.Test
	o.row = benchmarks.Row{RequestID: o.id, Query: "test " + name, Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildTest,
		ParamExtraction: benchmarks.NA, ToolExecution: benchmarks.NA}
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Change, "test "+name, name
	if err == nil {
		_, err = s.entry(name)
	}
	if err == nil && s.d.Generator == nil {
		err = errNoGenerator
	}
	if err != nil {
		return nil, o.finish(err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()
	rep, err := s.d.Generator.TestTool(ctx, name)
	switch {
	case errors.Is(err, generator.ErrNoExamples):
		err = &adaptbot.Error{Kind: adaptbot.NotFound, Err: err, Msg: fmt.Sprintf("%s has no stored examples (%s beside its source)", name, registry.ExamplesFile)}
	case errors.Is(err, registry.ErrNotFound):
		err = &adaptbot.Error{Kind: adaptbot.Conflict, Err: err, Msg: fmt.Sprintf("tool %s has no serving version to test", name)}
	}
	if rep != nil {
		o.rec.Result = marshal(rep)
		o.row.ToolExecution = benchmarks.TriOf(rep.OK)
		if !rep.OK {
			o.row.Error, o.row.ErrorKind = fmt.Sprintf("%d of %d examples failed", len(rep.Failures()), len(rep.Results)), string(adaptbot.Failed)
		}
	}
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return rep, nil
}

// Tools lists the registry's tools, serving or not.
func (s *Service) Tools(ctx context.Context) (*adaptbot.ToolList, error) {
	_, o, err := s.read(ctx, "list tools", identity.ReadTools)
	if err != nil {
		return nil, o.finish(err)
	}
	entries := s.d.Registry.List()
	out := make([]adaptbot.ToolInfo, 0, len(entries))
	for _, e := range entries {
		_, serving := s.d.Registry.Tool(e.Name)
		out = append(out, adaptbot.ToolInfo{Entry: e, Serving: serving})
	}
	return &adaptbot.ToolList{Tools: out, Count: len(out)}, o.finish(nil)
}

// Tool returns one tool with its source and examples.
func (s *Service) Tool(ctx context.Context, name string) (*adaptbot.ToolInfo, error) {
	ctx, o, err := s.read(ctx, "get tool", identity.ReadTools)
	var e registry.Entry
	if err == nil {
		e, err = s.entry(name)
	}
	if err != nil {
		return nil, o.finish(err)
	}
	v := &adaptbot.ToolInfo{Entry: e}
	if t, ok := s.d.Registry.Tool(e.Name); ok {
		v.Code, v.Serving = string(t.Code), true
		if s.d.Tiers != nil {
			st := s.d.Tiers.Status(t.Name, t.Code)
			v.Tier = &st
		}
	}
	if !v.Serving {
		if src, err := os.ReadFile(s.d.Registry.SourcePath(e.Name)); err == nil {
			v.Code = string(src)
		}
	}
	if e.PendingVersion > 0 {
		if src, err := s.d.Registry.VersionSource(e.Name, e.PendingVersion); err == nil {
			v.PendingCode = string(src)
		}
	}
	if ex := s.d.Registry.Examples(e.Name); json.Valid(ex) {
		v.Examples = ex
	}
	if s.d.Secrets != nil {
		if ts, err := s.d.Secrets.Trusts(ctx, e.Name); err == nil {
			v.Trusts = ts
		}
	}
	return v, o.finish(nil)
}

// Versions lists a tool's kept versions, oldest first. A version's note
// is shown whole to admins; others read its first line (noteFor).
func (s *Service) Versions(ctx context.Context, name string) (*adaptbot.VersionList, error) {
	_, o, err := s.read(ctx, "versions", identity.ReadTools)
	if err == nil {
		err = validName(name)
	}
	if err != nil {
		return nil, o.finish(err)
	}
	vs, err := s.d.Registry.Versions(name)
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return &adaptbot.VersionList{Tool: name, Versions: versionsFor(o.who, vs)}, nil
}

// Diff compares two kept versions of a tool: to 0 means the newest, from
// 0 the one before to.
func (s *Service) Diff(ctx context.Context, name string, from, to int) (*adaptbot.Diff, error) {
	list, err := s.Versions(ctx, name)
	var vs []adaptbot.Version
	if list != nil {
		vs = list.Versions
	}
	if errors.Is(err, registry.ErrNotFound) || (err == nil && len(vs) == 0) {
		return nil, adaptbot.Errorf(adaptbot.NotFound, "no tool named %q has kept versions; GET /api/tools lists the tools", name)
	}
	if err != nil {
		return nil, err
	}
	if to == 0 {
		to = vs[len(vs)-1].Version
	}
	if from == 0 {
		from = to - 1
	}
	if from < 1 {
		return nil, adaptbot.Errorf(adaptbot.Invalid, "version %d is the first: there is nothing before it to compare with", to)
	}
	a, err := s.d.Registry.VersionSource(name, from)
	if err != nil {
		return nil, &adaptbot.Error{Kind: adaptbot.NotFound, Msg: err.Error()}
	}
	b, err := s.d.Registry.VersionSource(name, to)
	if err != nil {
		return nil, &adaptbot.Error{Kind: adaptbot.NotFound, Msg: err.Error()}
	}
	diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: fmt.Sprintf("%s v%d", name, from), ToFile: fmt.Sprintf("%s v%d", name, to), Context: 3,
	})
	if err != nil {
		return nil, err
	}
	return &adaptbot.Diff{Tool: name, From: from, To: to, Diff: diff, Same: diff == ""}, nil
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func merge(a, b map[string]any) map[string]any {
	if a == nil {
		return b
	}
	for k, v := range b {
		a[k] = v
	}
	return a
}
