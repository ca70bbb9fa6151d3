package service

import (
	"context"
	"errors"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/llm"
	"adaptbot/traces"
)

// errNoRequest refuses a build or a plan asked for in no words.
var errNoRequest = &adaptbot.Error{Kind: adaptbot.Invalid, Msg: `"request" is required: send {"request": "make a tool that ..."}`}

// Build creates, modifies or deletes a tool as req asks, streaming its
// progress to st. A build the gate refuses is not an error: the result
// says OK=false and why, and the row records it as failed. The error is
// for a build that could not reach a verdict.
func (s *Service) Build(ctx context.Context, req adaptbot.BuildRequest, st adaptbot.Stream) (*adaptbot.BuildResult, error) {
	p, err := s.PrepareBuild(ctx, req)
	return runNow(ctx, st, p, err)
}

// PrepareBuild begins a build, refusing at once what Build would refuse
// before any model call: an empty request, the caller's role, no model, or
// a cluster that cannot take changes.
func (s *Service) PrepareBuild(ctx context.Context, r adaptbot.BuildRequest) (adaptbot.Prepared[*adaptbot.BuildResult], error) {
	req := generator.Request{Text: strings.TrimSpace(r.Text), Op: r.Op, Tool: r.Tool, Summary: r.Summary, Force: r.Force}
	ctx, o, err := s.start(ctx, "build", req.Tool, identity.Build)
	o.fallback, o.deadline, o.what = adaptbot.Upstream, s.d.Deadlines.Build, "Building tools"
	o.row = buildRow(o.row, req, nil)
	o.rec.Kind, o.rec.Query, o.rec.Tool = traces.Build, req.Text, req.Tool
	if err == nil {
		err = s.buildable(req)
	}
	return prepare(o, err, func(ctx context.Context, st adaptbot.Stream) (*adaptbot.BuildResult, error) {
		ctx, cancel := context.WithTimeout(ctx, o.deadline)
		defer cancel()
		res, err := s.build(ctx, req, st.Progress)
		return res, o.finishBuild(req, res, err)
	})
}

// buildable says whether a build of req is refused before it starts: an
// empty request, a server without a model (a delete of a named tool needs
// none), or a cluster that cannot take changes.
func (s *Service) buildable(req generator.Request) error {
	switch {
	case strings.TrimSpace(req.Text) == "" && req.Tool == "":
		return errNoRequest
	case s.d.Generator == nil || (s.d.Agent == nil || s.d.Agent.Model() == nil) && !(req.Op == generator.Delete && req.Tool != ""):
		return noModel("Building tools", llm.ErrNoModel)
	}
	return s.writable()
}

// finishBuild records a build's result in its row and trace and ends the
// operation.
func (o *op) finishBuild(req generator.Request, res *generator.Result, err error) error {
	o.row = buildRow(o.row, req, res)
	if o.category != "" {
		o.row.Category = o.category
	}
	if res != nil {
		o.rec.Tool = res.Tool
		o.rec.Result = marshal(res)
		if err == nil && !res.OK {
			o.row.ErrorKind = string(adaptbot.Failed)
			o.rec.Error = res.Error
		}
	}
	return o.finish(err)
}

// build runs a build for whoever ctx names: the generator asks, once the
// operation is decided, whether the caller may (a delete needs more than a
// create), and in a cluster takes the cluster-wide lock on the name.
func (s *Service) build(ctx context.Context, req generator.Request, progress func(generator.Event)) (*generator.Result, error) {
	who := identity.From(ctx)
	need := identity.Build
	if req.Op == generator.Delete {
		need = identity.Delete
	}
	// Refused before any model call; when the words decide the operation,
	// the generator asks again once it is decided.
	if err := identity.Permit(who, need); err != nil {
		return nil, err
	}
	if s.d.Generator == nil {
		return nil, errNoGenerator
	}
	if err := s.writable(); err != nil {
		return nil, err
	}
	req.Permit = func(op generator.Op, _ string) error {
		if op == generator.Delete {
			return identity.Permit(who, identity.Delete)
		}
		return identity.Permit(who, identity.Build)
	}
	return s.d.Generator.Build(ctx, req, progress)
}

// writable refuses changes while the cluster cannot take them.
func (s *Service) writable() error {
	if s.d.Cluster == nil {
		return nil
	}
	return s.d.Cluster.Writable()
}

// lock takes the cluster-wide lock on a tool's name; a no-op on files.
func (s *Service) lock(ctx context.Context, name string) (func(), error) {
	if s.d.Cluster == nil {
		return func() {}, nil
	}
	release, err := s.d.Cluster.Lock(ctx, name)
	if release == nil {
		release = func() {} // a refused lock has none, and callers defer it
	}
	return release, err
}

// buildRow is the row of a build, filled from its result once there is one.
func buildRow(row benchmarks.Row, req generator.Request, res *generator.Result) benchmarks.Row {
	row.Query, row.Intent = req.Text, adaptbot.IntentBuild
	row.ParamExtraction, row.ToolExecution = benchmarks.NA, benchmarks.NA
	op := req.Op
	if res != nil {
		op = res.Op
		row.BuildAttempts = res.Attempts
		row.GenerationTime = res.Duration
		if !res.OK {
			row.Error = res.Error
		}
	}
	if op == "" {
		op = generator.Create
	}
	row.Category = "build_" + string(op)
	if row.Query == "" {
		row.Query = string(op) + " " + req.Tool
	}
	return row
}

// chatBuilder runs the builds a chat decides on, for the chat's caller: the
// same permission check, cluster guard and lock as a build through the API,
// recorded in the chat's own row and trace.
type chatBuilder struct{ s *Service }

func (b chatBuilder) Build(ctx context.Context, req agent.BuildRequest, progress func(agent.BuildStep)) (*agent.BuildResult, error) {
	var report func(generator.Event)
	if progress != nil {
		report = func(ev generator.Event) { progress(agent.BuildStep{Stage: ev.Stage, Message: ev.Message}) }
	}
	greq := generator.Request{Text: req.Text}
	if req.Action != "" && req.Tool != "" {
		greq.Op, greq.Tool, greq.Summary = generator.Op(strings.ToLower(req.Action)), req.Tool, req.Summary
	}
	res, err := b.s.build(ctx, greq, report)
	if e, ok := errors.AsType[*adaptbot.Error](err); ok && (e.Kind == adaptbot.Forbidden || e.Kind == adaptbot.Unauthenticated) {
		return nil, &refusal{e.Msg}
	}
	if res == nil {
		return nil, err
	}
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	return &agent.BuildResult{Action: string(res.Op), Tool: res.Tool, OK: res.OK, Version: res.Version,
		Attempts: res.Attempts, Error: res.Error, Summary: res.Summary}, nil
}

// refusal is a chat build the caller may not make, in words for the reply.
type refusal struct{ msg string }

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == agent.ErrForbidden }

// Plan says what a build of the request would do (operation, name,
// summary, inputs) before it starts: one model call, nothing written.
func (s *Service) Plan(ctx context.Context, req adaptbot.PlanRequest) (*adaptbot.Plan, error) {
	request := strings.TrimSpace(req.Request)
	ctx, o, err := s.start(ctx, "plan", "", identity.Build)
	o.fallback, o.deadline, o.what = adaptbot.Upstream, s.d.Deadlines.Build, "Planning a build"
	o.row = benchmarks.Row{RequestID: o.id, Query: request, Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildPlan,
		ParamExtraction: benchmarks.NA, ToolExecution: benchmarks.NA}
	o.rec.Kind, o.rec.Query = traces.Build, request
	switch {
	case err != nil:
	case request == "":
		err = errNoRequest
	case s.d.Generator == nil:
		err = llm.ErrNoModel
	}
	if err != nil {
		return nil, o.finish(err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.deadline)
	defer cancel()
	began := time.Now()
	plan, err := s.d.Generator.Plan(ctx, request)
	o.row.GenerationTime = time.Since(began)
	if plan != nil {
		o.rec.Tool, o.rec.Result = plan.Tool, marshal(plan)
	}
	if err := o.finish(err); err != nil {
		return nil, err
	}
	return plan, nil
}
