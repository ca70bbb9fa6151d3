package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"adaptbot/llm"
)

// Span names that are not a GenAI operation followed by a name.
const (
	SpanInvokeAgent = "invoke_agent"
	SpanBuild       = "build"
	SpanGate        = "gate"
)

// AdaptBot's own attributes, for what the semantic conventions do not name.
const (
	KeyRequestID     = attribute.Key("adaptbot.request.id")
	KeyDoor          = attribute.Key("adaptbot.door")
	KeyIntent        = attribute.Key("adaptbot.intent")
	KeyPath          = attribute.Key("adaptbot.path")
	KeyOperation     = attribute.Key("adaptbot.operation")
	KeyTool          = attribute.Key("adaptbot.tool")
	KeyBuildAction   = attribute.Key("adaptbot.build.action")
	KeyBuildAttempts = attribute.Key("adaptbot.build.attempts")
	KeyBuildOK       = attribute.Key("adaptbot.build.ok")
	KeyGateStage     = attribute.Key("adaptbot.gate.stage")
	KeyGateProblems  = attribute.Key("adaptbot.gate.problems")
	KeySandboxOp     = attribute.Key("adaptbot.sandbox.op")
	KeyWorkerPID     = attribute.Key("adaptbot.sandbox.worker.pid")
	// KeyToolTier says which tier of the sandbox ran a call (package native).
	KeyToolTier = attribute.Key("adaptbot.sandbox.tier")
	KeyLLMCalls = attribute.Key("adaptbot.llm.calls")
)

// agentName is gen_ai.agent.name on invoke_agent spans.
const agentName = "adaptbot"

// start opens a span when tracing is on; off, it returns ctx and a nil
// span, which every End below takes as "nothing to do".
func start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span, *state) {
	st := current.Load()
	if st == nil {
		return ctx, nil, nil
	}
	ctx, s := st.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, s, st
}

// finish sets the span's error, if any, and ends it. kind is error.type: a
// short word for the sort of failure ("timeout", "not_found"); empty with
// an error is the error's Go type.
func finish(s trace.Span, kind string, err error) {
	if err != nil || kind != "" {
		if kind == "" {
			kind = errorType(err)
		}
		s.SetAttributes(semconv.ErrorTypeKey.String(kind))
		msg := kind
		if err != nil {
			msg = err.Error()
		}
		s.SetStatus(codes.Error, msg)
	}
	s.End()
}

// errorType is error.type for an error of unknown kind.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	if e, ok := llm.AsError(err); ok {
		return string(e.Kind)
	}
	return "_OTHER"
}

// AgentStart describes a chat as its invoke_agent span opens.
type AgentStart struct {
	RequestID string
	Door      string // http, mcp, cli or internal
	// Model is the chat's model, for gen_ai.provider.name and
	// gen_ai.request.model; nil leaves them out.
	Model llm.Model
	// Message is the user's message, attached only with content on.
	Message string
}

// AgentEnd is how a chat ended.
type AgentEnd struct {
	Intent, Path              string
	LLMCalls                  int
	InputTokens, OutputTokens int
	// Reply is the answer, attached only with content on.
	Reply string
	// ErrorKind is error.type when the chat failed (the service's kind);
	// Err its cause.
	ErrorKind string
	Err       error
}

// AgentSpan is a chat's invoke_agent span; the zero AgentSpan (tracing off)
// does nothing.
type AgentSpan struct {
	s       trace.Span
	content bool
}

// StartAgent opens the invoke_agent span of one chat, under which its
// model calls and tool calls nest. The service layer calls it.
func StartAgent(ctx context.Context, a AgentStart) (context.Context, AgentSpan) {
	if current.Load() == nil {
		return ctx, AgentSpan{}
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(agentName),
		KeyRequestID.String(a.RequestID),
		KeyDoor.String(a.Door),
	}
	if a.Model != nil {
		provider, model := describe(a.Model)
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(provider), semconv.GenAIRequestModel(model))
	}
	ctx, s, st := start(ctx, SpanInvokeAgent, trace.SpanKindInternal, attrs...)
	if st.content && s.IsRecording() {
		s.SetAttributes(semconv.GenAIInputMessagesKey.String(messagesJSON([]llm.Message{{Role: llm.User, Content: a.Message}})))
	}
	return ctx, AgentSpan{s: s, content: st.content}
}

// End records how the chat went and ends the span.
func (a AgentSpan) End(e AgentEnd) {
	if a.s == nil {
		return
	}
	if a.s.IsRecording() {
		a.s.SetAttributes(
			KeyIntent.String(e.Intent),
			KeyPath.String(e.Path),
			KeyLLMCalls.Int(e.LLMCalls),
			semconv.GenAIUsageInputTokens(e.InputTokens),
			semconv.GenAIUsageOutputTokens(e.OutputTokens))
		if a.content && e.Reply != "" {
			a.s.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputJSON(llm.Response{Content: e.Reply})))
		}
	}
	finish(a.s, e.ErrorKind, e.Err)
}

// Span is a plain span of ours; the zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// StartOperation opens the span of one service operation other than a
// chat (run, build, delete, rollback, approve, test, plan, an MCP tool
// call), named for it, with the tool it is about ("run calculator").
func StartOperation(ctx context.Context, op, tool, requestID, door string) (context.Context, Span) {
	if current.Load() == nil {
		return ctx, Span{}
	}
	name := op
	if tool != "" {
		name += " " + tool
	}
	ctx, s, _ := start(ctx, name, trace.SpanKindInternal,
		KeyOperation.String(op), KeyTool.String(tool), KeyRequestID.String(requestID), KeyDoor.String(door))
	return ctx, Span{s}
}

// End ends the span, with its error kind (the service's) if it failed.
func (s Span) End(errorKind string, err error) {
	if s.s != nil {
		finish(s.s, errorKind, err)
	}
}

// toolCallIDKey carries the model's id of the next tool call.
type toolCallIDKey struct{}

// WithToolCallID returns ctx carrying the id the model gave a tool call,
// for the gen_ai.tool.call.id of the execute_tool span that Call opens.
// Without one the span's own id stands in.
func WithToolCallID(ctx context.Context, id string) context.Context {
	if current.Load() == nil || id == "" {
		return ctx
	}
	return context.WithValue(ctx, toolCallIDKey{}, id)
}

// ToolSpan is one tool call's execute_tool span, and its count in the
// metrics Use installed. The zero ToolSpan does nothing.
type ToolSpan struct {
	s       trace.Span
	content bool
	m       *Metrics
	tool    string
	began   time.Time
}

// StartTool opens the execute_tool span of one call of the tool named
// name ("calculator", "server/tool"), a call made by the model, a person,
// or another tool (whose call it nests under). remote says the tool runs
// on an MCP server. args are attached only with content on. The toolbox
// calls it for every tool call, so that every door is covered.
func StartTool(ctx context.Context, name string, remote bool, args []byte) (context.Context, ToolSpan) {
	m := used.Load()
	st := current.Load()
	if st == nil && m == nil {
		return ctx, ToolSpan{}
	}
	t := ToolSpan{m: m, tool: name, began: time.Now()}
	if st == nil {
		return ctx, t
	}
	id, _ := ctx.Value(toolCallIDKey{}).(string)
	if id != "" {
		ctx = context.WithValue(ctx, toolCallIDKey{}, "") // not the id of the calls this one makes
	}
	toolType := "function"
	if remote {
		toolType = "extension"
	}
	ctx, t.s, _ = start(ctx, "execute_tool "+name, trace.SpanKindInternal,
		semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name), semconv.GenAIToolTypeKey.String(toolType))
	if t.s.IsRecording() {
		if id == "" {
			id = t.s.SpanContext().SpanID().String()
		}
		t.s.SetAttributes(semconv.GenAIToolCallID(id))
		if st.content {
			t.content = true
			t.s.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(cut(string(args))))
		}
	}
	return ctx, t
}

// End counts the call under outcome ("ok", "invalid_arguments", the
// sandbox's kind of failure, ...) and ends the span with the result, or
// the error.
func (t ToolSpan) End(output, outcome string, err error) {
	if t.m != nil {
		t.m.ToolCall(t.tool, outcome, time.Since(t.began))
	}
	if t.s == nil {
		return
	}
	if t.content && err == nil && t.s.IsRecording() {
		t.s.SetAttributes(semconv.GenAIToolCallResultKey.String(cut(output)))
	}
	if outcome == "ok" {
		outcome = ""
	}
	finish(t.s, outcome, err)
}

// BuildSpan is a build's span; the zero BuildSpan does nothing.
type BuildSpan struct{ s trace.Span }

// StartBuild opens the span of one build (create, modify, delete); the
// action and tool may still be undecided, and are set by End. Its model
// calls, gate runs and registry write nest under it.
func StartBuild(ctx context.Context, action, tool string) (context.Context, BuildSpan) {
	if current.Load() == nil {
		return ctx, BuildSpan{}
	}
	name := SpanBuild
	if action != "" {
		name += " " + action
	}
	ctx, s, _ := start(ctx, name, trace.SpanKindInternal, KeyBuildAction.String(action), KeyTool.String(tool))
	return ctx, BuildSpan{s}
}

// End names the span for the action ("build create"), records the tool,
// the attempts and whether the tool was saved, and ends it. failure is
// the build's refusal for people, when it did not pass; err is for
// failures that left no verdict.
func (b BuildSpan) End(action, tool string, ok bool, attempts int, failure string, err error) {
	if b.s == nil {
		return
	}
	if action != "" {
		b.s.SetName(SpanBuild + " " + action)
	}
	b.s.SetAttributes(KeyBuildAction.String(action), KeyTool.String(tool), KeyBuildAttempts.Int(attempts), KeyBuildOK.Bool(ok))
	if !ok && err == nil && failure != "" {
		b.s.SetStatus(codes.Error, failure)
		b.s.SetAttributes(semconv.ErrorTypeKey.String("rejected"))
	}
	finish(b.s, "", err)
}

// Gate is one attempt's pass through the generator's gate: a gate span,
// and a span per stage under it. A nil *Gate (tracing off) does nothing.
type Gate struct {
	s     trace.Span
	ctx   context.Context
	stage trace.Span
}

// StartGate opens the gate span of one attempt at a tool.
func StartGate(ctx context.Context, tool string) (context.Context, *Gate) {
	if current.Load() == nil {
		return ctx, nil
	}
	ctx, s, _ := start(ctx, SpanGate, trace.SpanKindInternal, KeyTool.String(tool))
	return ctx, &Gate{s: s, ctx: ctx}
}

// Stage ends the stage before, if any, and opens the next ("check",
// "compile", "examples"), returning the context its work runs in (so that
// sandbox calls nest under it). With g nil it returns ctx.
func (g *Gate) Stage(ctx context.Context, stage string) context.Context {
	if g == nil {
		return ctx
	}
	if g.stage != nil {
		g.stage.End()
	}
	ctx, g.stage, _ = start(g.ctx, SpanGate+" "+stage, trace.SpanKindInternal, KeyGateStage.String(stage))
	return ctx
}

// End ends the last stage and the gate, recording how many problems the
// candidate had (a failed stage is one with problems), or the error that
// stopped the gate.
func (g *Gate) End(problems int, err error) {
	if g == nil {
		return
	}
	for _, s := range []trace.Span{g.stage, g.s} {
		if s == nil {
			continue
		}
		s.SetAttributes(KeyGateProblems.Int(problems))
		kind := ""
		if problems > 0 {
			kind = "rejected"
		}
		finish(s, kind, err)
	}
}

// SandboxSpan is one call into the sandbox; the zero SandboxSpan does
// nothing.
type SandboxSpan struct{ s trace.Span }

// StartSandbox opens the span of one sandbox operation ("call" or
// "compile") of tool.
func StartSandbox(ctx context.Context, op, tool string) (context.Context, SandboxSpan) {
	if current.Load() == nil {
		return ctx, SandboxSpan{}
	}
	ctx, s, _ := start(ctx, "sandbox "+op, trace.SpanKindInternal, KeySandboxOp.String(op), KeyTool.String(tool))
	return ctx, SandboxSpan{s}
}

// SandboxWorker records on ctx's sandbox span which worker process served
// the call.
func SandboxWorker(ctx context.Context, pid int) {
	if current.Load() == nil {
		return
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(KeyWorkerPID.Int(pid))
	}
}

// End ends the span with the sandbox's kind of failure, if any.
func (s SandboxSpan) End(kind string, err error) {
	if s.s != nil {
		finish(s.s, kind, err)
	}
}

// ToolTier records on ctx's span (the tool call's) which tier of the
// sandbox ran the call: "interpreted" or "native" (package native).
func ToolTier(ctx context.Context, tier string) {
	if current.Load() == nil {
		return
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.SetAttributes(KeyToolTier.String(tier))
	}
}
