package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"adaptbot/llm"
)

// fakeModel is a model scripted by a function.
type fakeModel struct {
	name     string
	generate func(ctx context.Context, r llm.Request) (llm.Response, error)
}

func (f *fakeModel) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	return f.generate(ctx, r)
}
func (f *fakeModel) Name() string { return f.name }

var _ llm.Model = (*fakeModel)(nil)

// answering is a model that answers "ok" with the given usage.
func answering(name string, in, out int) *fakeModel {
	return &fakeModel{name: name, generate: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Content: "ok", Usage: llm.Usage{PromptTokens: in, CompletionTokens: out}}, nil
	}}
}

// record turns tracing on into an in-memory exporter until the test ends.
func record(t *testing.T, content bool) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	restore := Enable(tp, content)
	t.Cleanup(func() {
		restore()
		tp.Shutdown(context.Background()) //nolint:errcheck // in memory
	})
	return exp
}

func attrsOf(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

func byName(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %q among %q, want 1", len(found), name, names)
	}
	return found[0]
}

func isChild(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		t.Errorf("%q is not a child of %q", child.Name, parent.Name)
	}
}

// TestOffCostsNothing: with tracing off the helpers hand the context back
// as it was and make no span, and a wrapped model is called as is.
func TestOffCostsNothing(t *testing.T) {
	if Tracing() {
		t.Fatal("tracing is on before anything enabled it")
	}
	ctx := context.Background()
	if got, _ := StartAgent(ctx, AgentStart{RequestID: "r"}); got != ctx {
		t.Error("StartAgent changed the context")
	}
	if got, _ := StartTool(ctx, "calculator", false, nil); got != ctx {
		t.Error("StartTool changed the context")
	}
	if got, g := StartGate(ctx, "x"); got != ctx || g != nil || g.Stage(ctx, "check") != ctx {
		t.Error("StartGate made something")
	}
	if got, _ := StartSandbox(ctx, "call", "x"); got != ctx {
		t.Error("StartSandbox changed the context")
	}
	m := WrapModel(answering("openai/gpt-4o-mini", 1, 1), nil)
	resp, err := m.Generate(ctx, llm.Request{})
	if err != nil || resp.Content != "ok" || m.Name() != "openai/gpt-4o-mini" {
		t.Errorf("wrapped model: %+v, %v, %q", resp, err, m.Name())
	}
	if WrapModel(nil, nil) != nil {
		t.Error("a nil model wrapped is not nil")
	}
	// Ending the zero spans is safe.
	AgentSpan{}.End(AgentEnd{Err: errors.New("x")})
	ToolSpan{}.End("", "ok", nil)
	BuildSpan{}.End("create", "x", true, 1, "", nil)
	Span{}.End("failed", nil)
	SandboxSpan{}.End("", nil)
}

// TestChatSpanTree: a chat as the service and the toolbox make it: an
// invoke_agent span, three chat spans with the GenAI attributes and token
// usage, and an execute_tool span for a tool that calls another, nested.
func TestChatSpanTree(t *testing.T) {
	exp := record(t, false)
	model := WrapModel(answering("openai/gpt-4o-mini", 120, 7), nil)

	ctx, agent := StartAgent(context.Background(), AgentStart{RequestID: "req-1", Door: "http", Model: model, Message: "secret message"})
	for range 2 {
		if _, err := model.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}, MaxTokens: 256}); err != nil {
			t.Fatal(err)
		}
	}
	toolCtx, outer := StartTool(WithToolCallID(ctx, "call_abc"), "weather", false, []byte(`{"city":"Oslo"}`))
	_, inner := StartTool(toolCtx, "geo/lookup", true, []byte(`{"q":"Oslo"}`))
	inner.End("59.9,10.7", "ok", nil)
	outer.End("4°C", "ok", nil)
	if _, err := model.Generate(ctx, llm.Request{}); err != nil {
		t.Fatal(err)
	}
	agent.End(AgentEnd{Intent: "CHAT", Path: "weather", LLMCalls: 3, InputTokens: 360, OutputTokens: 21, Reply: "4°C"})

	spans := exp.GetSpans()
	if len(spans) != 6 {
		t.Fatalf("%d spans, want 6", len(spans))
	}
	root := byName(t, spans, "invoke_agent")
	ra := attrsOf(root)
	for k, want := range map[attribute.Key]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "adaptbot", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": int64(360), "gen_ai.usage.output_tokens": int64(21),
		"adaptbot.request.id": "req-1", "adaptbot.door": "http", "adaptbot.path": "weather",
	} {
		if got := ra[k].AsInterface(); got != want {
			t.Errorf("invoke_agent %s = %v, want %v", k, got, want)
		}
	}
	if root.Parent.IsValid() {
		t.Error("invoke_agent has a parent")
	}
	chats := 0
	for _, s := range spans {
		if s.Name != "chat gpt-4o-mini" {
			continue
		}
		chats++
		isChild(t, s, root)
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("chat span kind %v, want client", s.SpanKind)
		}
		a := attrsOf(s)
		for k, want := range map[attribute.Key]any{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
			"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(7),
		} {
			if got := a[k].AsInterface(); got != want {
				t.Errorf("chat %s = %v, want %v", k, got, want)
			}
		}
	}
	if chats != 3 {
		t.Errorf("%d chat spans, want 3", chats)
	}
	weather := byName(t, spans, "execute_tool weather")
	isChild(t, weather, root)
	wa := attrsOf(weather)
	if wa["gen_ai.tool.name"].AsString() != "weather" || wa["gen_ai.tool.call.id"].AsString() != "call_abc" ||
		wa["gen_ai.operation.name"].AsString() != "execute_tool" || wa["gen_ai.tool.type"].AsString() != "function" {
		t.Errorf("execute_tool weather attributes %v", wa)
	}
	lookup := byName(t, spans, "execute_tool geo/lookup")
	isChild(t, lookup, weather)
	la := attrsOf(lookup)
	if id := la["gen_ai.tool.call.id"].AsString(); id == "call_abc" || id != lookup.SpanContext.SpanID().String() {
		t.Errorf("the nested call's id is %q: not its own span's id", id)
	}
	if la["gen_ai.tool.type"].AsString() != "extension" {
		t.Errorf("an MCP tool's type is %q", la["gen_ai.tool.type"].AsString())
	}
	// Content is off: no arguments, results or messages.
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if k := string(kv.Key); strings.Contains(k, "arguments") || strings.Contains(k, "result") || strings.Contains(k, "messages") {
				t.Errorf("%s carries %s with content off", s.Name, k)
			}
		}
	}
}

// TestContentOn: with content on, tool spans carry their arguments and
// results, and chat spans the messages, in the conventions' JSON form.
func TestContentOn(t *testing.T) {
	exp := record(t, true)
	model := WrapModel(&fakeModel{name: "anthropic/claude", generate: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Calls: []llm.FunctionCall{{Name: "weather", Arguments: json.RawMessage(`{"city":`)}}}, nil
	}}, nil)
	ctx := context.Background()
	if _, err := model.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.System, Content: "be brief"}, {Role: llm.User, Content: "weather in Oslo?"}}}); err != nil {
		t.Fatal(err)
	}
	_, tool := StartTool(ctx, "weather", false, []byte(`{"city":"Oslo"}`))
	tool.End("4°C", "ok", nil)

	spans := exp.GetSpans()
	chat := attrsOf(byName(t, spans, "chat claude"))
	var in, out []map[string]any
	if err := json.Unmarshal([]byte(chat["gen_ai.input.messages"].AsString()), &in); err != nil || len(in) != 2 || in[1]["role"] != "user" {
		t.Errorf("gen_ai.input.messages %q (%v)", chat["gen_ai.input.messages"].AsString(), err)
	}
	// Invalid arguments from the model are kept as text, and the JSON is
	// still valid.
	if err := json.Unmarshal([]byte(chat["gen_ai.output.messages"].AsString()), &out); err != nil || len(out) != 1 {
		t.Fatalf("gen_ai.output.messages %q (%v)", chat["gen_ai.output.messages"].AsString(), err)
	}
	parts := out[0]["parts"].([]any)
	if call := parts[0].(map[string]any); call["type"] != "tool_call" || call["arguments"] != `{"city":` {
		t.Errorf("output part %v", call)
	}
	ta := attrsOf(byName(t, spans, "execute_tool weather"))
	if ta["gen_ai.tool.call.arguments"].AsString() != `{"city":"Oslo"}` || ta["gen_ai.tool.call.result"].AsString() != "4°C" {
		t.Errorf("tool content %v", ta)
	}
}

// TestErrors: failures set the span's status and error.type.
func TestErrors(t *testing.T) {
	exp := record(t, false)
	overloaded := &llm.Error{Kind: llm.Overloaded, Provider: "openai", Model: "m"}
	model := WrapModel(&fakeModel{name: "openai/m", generate: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, overloaded
	}}, nil)
	ctx := context.Background()
	model.Generate(ctx, llm.Request{}) //nolint:errcheck // the span is checked
	_, tool := StartTool(ctx, "calc", false, nil)
	tool.End("", "timeout", errors.New("tool calc: timeout: ran past its 10s time limit"))
	_, op := StartOperation(ctx, "run", "calc", "r1", "mcp")
	op.End("not_found", errors.New(`no tool named "calc"`))
	_, agent := StartAgent(ctx, AgentStart{})
	agent.End(AgentEnd{Err: context.Canceled})

	for name, want := range map[string]string{"chat m": "overloaded", "execute_tool calc": "timeout", "run calc": "not_found", "invoke_agent": "cancelled"} {
		s := byName(t, exp.GetSpans(), name)
		if s.Status.Code != codes.Error {
			t.Errorf("%s status %v, want error", name, s.Status)
		}
		if got := attrsOf(s)["error.type"].AsString(); got != want {
			t.Errorf("%s error.type %q, want %q", name, got, want)
		}
	}
}

// TestBuildGateSandbox: a build, its gate's stages and the sandbox calls
// they make nest in that order.
func TestBuildGateSandbox(t *testing.T) {
	exp := record(t, false)
	ctx, build := StartBuild(context.Background(), "", "")
	gctx, gate := StartGate(ctx, "roman")
	gate.Stage(gctx, "check")
	sctx := gate.Stage(gctx, "compile")
	cctx, compile := StartSandbox(sctx, "compile", "roman")
	SandboxWorker(cctx, 4242)
	compile.End("", nil)
	sctx = gate.Stage(gctx, "examples")
	_, run := StartSandbox(sctx, "call", "roman")
	run.End("error", errors.New("tool roman: error: bad numeral"))
	gate.End(1, nil)
	build.End("create", "roman", false, 3, "The tool did not pass its examples.", nil)

	spans := exp.GetSpans()
	b := byName(t, spans, "build create")
	g := byName(t, spans, "gate")
	isChild(t, g, b)
	for _, st := range []string{"gate check", "gate compile", "gate examples"} {
		isChild(t, byName(t, spans, st), g)
	}
	c := byName(t, spans, "sandbox compile")
	isChild(t, c, byName(t, spans, "gate compile"))
	if pid := attrsOf(c)["adaptbot.sandbox.worker.pid"].AsInt64(); pid != 4242 {
		t.Errorf("worker pid %d", pid)
	}
	isChild(t, byName(t, spans, "sandbox call"), byName(t, spans, "gate examples"))
	if ba := attrsOf(b); ba["adaptbot.tool"].AsString() != "roman" || ba["adaptbot.build.attempts"].AsInt64() != 3 || ba["adaptbot.build.ok"].AsBool() {
		t.Errorf("build attributes %v", ba)
	}
	if b.Status.Code != codes.Error || g.Status.Code != codes.Error || byName(t, spans, "gate check").Status.Code == codes.Error {
		t.Errorf("statuses: build %v, gate %v", b.Status, g.Status)
	}
}

// TestExtract: a traceparent continues the caller's trace; none leaves the
// context as it was.
func TestExtract(t *testing.T) {
	exp := record(t, false)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	headers := map[string]string{"traceparent": parent}
	ctx := Extract(context.Background(), func(k string) string { return headers[k] })
	_, agent := StartAgent(ctx, AgentStart{})
	agent.End(AgentEnd{})
	s := byName(t, exp.GetSpans(), "invoke_agent")
	if s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
		t.Errorf("span %s parent %s: not in the caller's trace", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	bg := context.Background()
	if Extract(bg, func(string) string { return "" }) != bg {
		t.Error("no traceparent changed the context")
	}
	if got := Extract(bg, func(k string) string { return map[string]string{"traceparent": "garbage"}[k] }); trace.SpanContextFromContext(got).IsValid() {
		t.Error("a malformed traceparent became a parent")
	}
}

func TestCut(t *testing.T) {
	s := strings.Repeat("é", maxContent) // two bytes each
	got := cut(s)
	if !strings.HasSuffix(got, "…[cut, 32768 bytes]") || !strings.HasPrefix(got, "éé") || len(got) > maxContent+40 {
		t.Errorf("cut to %d bytes ending %q", len(got), got[len(got)-30:])
	}
	if cut("short") != "short" {
		t.Error("a short text was cut")
	}
}
