package service

import (
	"context"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/clip"
	"adaptbot/identity"
	"adaptbot/reqid"
	"adaptbot/telemetry"
	"adaptbot/traces"
)

// MaxRefusedName caps a tool name or category taken from a refused
// request.
const MaxRefusedName = 200

// Refuse writes the one row and trace of a request refused before its
// operation began, attributed to the caller and door ctx names, as an
// operation refused at its start does (finish). It returns the refusal as
// an *Error carrying the request ID.
func (s *Service) Refuse(ctx context.Context, r adaptbot.Refused) *adaptbot.Error {
	id := reqid.From(ctx)
	if id == "" {
		id = reqid.New()
		ctx = reqid.With(ctx, id)
	}
	// A name taken from a refused request's path or body is the caller's
	// to choose: it is clipped before it names a row.
	r.Tool, r.Category = clip.String(r.Tool, MaxRefusedName), clip.String(r.Category, MaxRefusedName)
	o := &op{s: s, id: id, who: identity.From(ctx), door: reqid.DoorOf(ctx), began: time.Now(), fallback: adaptbot.Invalid}
	o.ctx, o.span = telemetry.StartOperation(ctx, "refuse", r.Tool, id, o.door)
	o.row = benchmarks.Row{RequestID: id, Query: r.Query, Intent: r.Intent, Category: r.Category,
		ParamExtraction: benchmarks.NA, ToolExecution: benchmarks.NA}
	o.rec = traces.Record{ID: id, Kind: traceKind(r.Intent, r.Category), Query: r.Query, Tool: r.Tool}
	e, _ := o.finish(r.Err).(*adaptbot.Error)
	return e
}

// traceKind is the kind of trace of a request of intent and category.
func traceKind(intent, category string) string {
	switch intent {
	case adaptbot.IntentChat:
		return traces.Chat
	case adaptbot.IntentRun:
		return traces.Run
	case adaptbot.IntentFeedback:
		return traces.Feedback
	}
	switch category {
	case adaptbot.CategoryBuildDelete, adaptbot.CategoryBuildRollback, adaptbot.CategoryBuildApprove, adaptbot.CategoryBuildTest:
		return traces.Change
	}
	return traces.Build
}
