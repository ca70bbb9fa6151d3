package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"adaptbot/config"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/telemetry/telemetrytest"
	"adaptbot/web"
)

// TestTelemetryWiring wires what serve will: tracing toward a local OTLP
// receiver, the metrics with the sandbox's workers, and the model wrapped
// once. A model call through the real provider over loopback and a tool
// call through the toolbox then show up as spans (chat with its tokens,
// execute_tool with the sandbox call under it) and in /metrics.
func TestTelemetryWiring(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	llmSrv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Say("four words of reply") })
	dir := t.TempDir()
	copyTools(t, dir)
	env := map[string]string{
		"ADAPTBOT_TOOLS_DIR": filepath.Join(dir, "tools"), "ADAPTBOT_REGISTRY": filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_SANDBOX": "inprocess", "OPENAI_BASE_URL": llmSrv.BaseURL(), "OPENAI_API_KEY": "test", "ADAPTBOT_MODEL": "scripted",
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
	}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	var banner strings.Builder
	m, stop, err := startTelemetry(context.Background(), cfg, log, &banner)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.Contains(banner.String(), "tracing: OTLP/HTTP to "+rcv.URL+"/v1/traces") {
		t.Errorf("banner %q", banner.String())
	}
	w, err := openWorld(context.Background(), cfg, hooks{}, nil, log, m)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := watchWorld(m, w); err != nil {
		t.Fatal(err)
	}
	model := w.model // wrapped by openWorld

	ctx, agent := telemetry.StartAgent(context.Background(), telemetry.AgentStart{RequestID: "r1", Door: "http", Model: model})
	reply, err := model.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "what is six times seven"}}})
	if err != nil {
		t.Fatal(err)
	}
	calc, ok := w.box.Tool("calculator")
	if !ok {
		t.Fatal("no calculator")
	}
	if out, err := calc.Call(ctx, json.RawMessage(`{"expression":"6*7"}`)); err != nil || !strings.Contains(out, "42") {
		t.Fatalf("calculator: %q, %v", out, err)
	}
	agent.End(telemetry.AgentEnd{Intent: "CHAT", Path: "calculator", LLMCalls: 1,
		InputTokens: reply.Usage.PromptTokens, OutputTokens: reply.Usage.CompletionTokens})
	m.Request("http", "CHAT", "calculator", "ok", time.Second)

	stop() // flushes: every span is at the receiver when it returns
	spans := rcv.Spans()
	if len(telemetrytest.Named(spans, "invoke_agent")) != 1 {
		t.Fatalf("spans after the flush: %+v", spans)
	}
	root := telemetrytest.Named(spans, "invoke_agent")[0]
	chat := telemetrytest.Named(spans, "chat scripted")
	tool := telemetrytest.Named(spans, "execute_tool calculator")
	sandboxCall := telemetrytest.Named(spans, "sandbox call")
	if len(chat) != 1 || len(tool) != 1 || len(sandboxCall) != 1 {
		t.Fatalf("spans %+v", spans)
	}
	if chat[0].ParentID != root.SpanID || tool[0].ParentID != root.SpanID || sandboxCall[0].ParentID != tool[0].SpanID {
		t.Errorf("parentage: chat under %s, tool under %s, sandbox under %s; invoke_agent %s, tool %s",
			chat[0].ParentID, tool[0].ParentID, sandboxCall[0].ParentID, root.SpanID, tool[0].SpanID)
	}
	if in, out := chat[0].Attrs["gen_ai.usage.input_tokens"], chat[0].Attrs["gen_ai.usage.output_tokens"]; in != int64(reply.Usage.PromptTokens) || out != int64(4) || in == int64(0) {
		t.Errorf("chat tokens %v in, %v out; the provider reported %+v", in, out, reply.Usage)
	}
	if chat[0].Attrs["gen_ai.provider.name"] != "openai" || chat[0].Attrs["gen_ai.request.model"] != "scripted" {
		t.Errorf("chat attributes %v", chat[0].Attrs)
	}
	if root.Resource["service.instance.id"] != cfg.ReplicaID {
		t.Errorf("resource %v", root.Resource)
	}

	edge := web.NewServer(service.New(service.Deps{}), testAuth(t, cfg), m, edgeOptions(cfg, nil))
	client := listening(t, edge)
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Host = "127.0.0.1"
	resp, err := client.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	for _, line := range []string{
		`adaptbot_requests_total{door="http",intent="CHAT",outcome="ok",path="calculator"} 1`,
		`adaptbot_model_calls_total{model="scripted",outcome="ok",provider="openai"} 1`,
		`adaptbot_model_tokens_total{model="scripted",provider="openai",type="output"} 4`,
		`adaptbot_tool_calls_total{outcome="ok",tool="calculator"} 1`,
		`adaptbot_sandbox_workers_live 0`, // in-process: no worker processes
	} {
		if !strings.Contains(string(body), "\n"+line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

// TestChatIsTracedAndCounted is the whole path an operator sees: with
// OTEL_EXPORTER_OTLP_ENDPOINT set to a local receiver, a chat that calls a
// tool, sent with a traceparent, exports an invoke_agent span in the
// caller's trace, with chat spans (tokens used) and an execute_tool span
// under it; /metrics counts the chat, its model calls, its tokens and its
// tool call.
func TestChatIsTracedAndCounted(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	script := newScript(map[string]string{"what is 2+2?": "calculator"}, map[string]string{"what is 2+2?": `{"expression": "2+2"}`})
	llmSrv := llmtest.New(t, script.reply)
	env := modelEnv(llmSrv)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = rcv.URL
	in := start(t, env)
	const caller = "4bf92f3577b34da6a3ce929d0e0e4736"
	code, _, raw := in.send(t, "POST", "/chat", `{"message":"what is 2+2?"}`, map[string]string{
		"Content-Type": "application/json", "traceparent": "00-" + caller + "-00f067aa0ba902b7-01"})
	if code != 200 || jsonBody(t, raw)["path"] != "calculator" {
		t.Fatalf("chat = %d %s", code, raw)
	}
	spans := rcv.WaitFor(t, 30*time.Second, func(s []telemetrytest.Span) bool {
		return len(telemetrytest.Named(s, "invoke_agent")) == 1 && len(telemetrytest.Named(s, "execute_tool calculator")) == 1
	})
	root := telemetrytest.Named(spans, "invoke_agent")[0]
	if root.TraceID != caller || root.ParentID != "00f067aa0ba902b7" {
		t.Errorf("invoke_agent is not in the caller's trace: trace %s parent %s", root.TraceID, root.ParentID)
	}
	chats := telemetrytest.Named(spans, "chat scripted")
	if len(chats) < 2 {
		t.Fatalf("chat spans = %d, want the classifier's and the synthesizer's", len(chats))
	}
	for _, c := range chats {
		if c.ParentID != root.SpanID || c.Attrs["gen_ai.usage.input_tokens"] == nil || c.Attrs["gen_ai.provider.name"] == nil {
			t.Errorf("chat span %+v", c)
		}
	}
	tool := telemetrytest.Named(spans, "execute_tool calculator")[0]
	if tool.TraceID != caller || tool.Attrs["gen_ai.tool.name"] != "calculator" {
		t.Errorf("execute_tool span %+v", tool)
	}
	// The span names the call as the model did, so a trace viewer can pair
	// it with the model's request.
	if id, _ := tool.Attrs["gen_ai.tool.call.id"].(string); !strings.HasPrefix(id, "call_") {
		t.Errorf("execute_tool gen_ai.tool.call.id = %v, want the model's call id", tool.Attrs["gen_ai.tool.call.id"])
	}

	code, metrics := in.raw(t, "GET", "/metrics", "")
	body := string(metrics)
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`adaptbot_requests_total\{[^}]*door="http"[^}]*intent="CHAT"[^}]*outcome="ok"[^}]*\} 1`),
		regexp.MustCompile(`adaptbot_model_calls_total\{[^}]*\} 2`),
		regexp.MustCompile(`adaptbot_model_tokens_total\{[^}]*\} [1-9]`),
		regexp.MustCompile(`adaptbot_tool_calls_total\{[^}]*tool="calculator"[^}]*\} 1`),
	} {
		if !want.MatchString(body) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
