package telemetry_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"adaptbot/llm"
	"adaptbot/telemetry"
	"adaptbot/telemetry/telemetrytest"
)

type model struct{}

func (model) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Content: "4°C", Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 3}}, nil
}
func (model) Name() string { return "ollama/llama3.1" }

// setup turns tracing on toward the receiver through getenv values only.
func setup(t *testing.T, vars map[string]string) (shutdown func(context.Context) error) {
	t.Helper()
	c, err := telemetry.LoadConfig(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	shutdown, err = telemetry.Setup(context.Background(), c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(context.Background()) }) //nolint:errcheck // a second shutdown is a no-op
	return shutdown
}

// TestOTLPExport: spans leave over OTLP/HTTP protobuf to the configured
// endpoint with the configured headers and resource, keep their names,
// attributes and parentage, continue a caller's trace, and shutdown
// flushes them without waiting for the batch timer.
func TestOTLPExport(t *testing.T) {
	rcv := telemetrytest.NewReceiver(t)
	shutdown := setup(t, map[string]string{
		telemetry.EnvEndpoint:           rcv.URL,
		telemetry.EnvHeaders:            "Authorization=Basic%20cGs6c2s=",
		telemetry.EnvServiceName:        "adaptbot-test",
		telemetry.EnvResourceAttributes: "deployment.environment=test",
	})
	if !telemetry.Tracing() {
		t.Fatal("Setup with an endpoint left tracing off")
	}
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := telemetry.Extract(context.Background(), func(k string) string {
		return map[string]string{"traceparent": caller}[k]
	})
	m := telemetry.WrapModel(model{}, nil)
	ctx, agent := telemetry.StartAgent(ctx, telemetry.AgentStart{RequestID: "r-42", Door: "http", Model: m})
	m.Generate(ctx, llm.Request{}) //nolint:errcheck // a fake
	_, tool := telemetry.StartTool(ctx, "weather", false, nil)
	tool.End("4°C", "ok", nil)
	agent.End(telemetry.AgentEnd{Intent: "CHAT", Path: "weather", LLMCalls: 1, InputTokens: 50, OutputTokens: 3})

	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Shutdown flushed: everything is there now, no waiting.
	spans := rcv.Spans()
	if p := rcv.Problems(); len(p) > 0 {
		t.Fatalf("the receiver refused exports: %q", p)
	}
	if len(spans) != 3 {
		t.Fatalf("%d spans received, want 3: %+v", len(spans), spans)
	}
	root := telemetrytest.Named(spans, "invoke_agent")
	chat := telemetrytest.Named(spans, "chat llama3.1")
	exec := telemetrytest.Named(spans, "execute_tool weather")
	if len(root) != 1 || len(chat) != 1 || len(exec) != 1 {
		t.Fatalf("spans %+v", spans)
	}
	if root[0].TraceID != "0af7651916cd43dd8448eb211c80319c" || root[0].ParentID != "b7ad6b7169203331" {
		t.Errorf("invoke_agent in trace %s under %s: not the caller's", root[0].TraceID, root[0].ParentID)
	}
	for _, s := range []telemetrytest.Span{chat[0], exec[0]} {
		if s.ParentID != root[0].SpanID || s.TraceID != root[0].TraceID {
			t.Errorf("%s is not under invoke_agent", s.Name)
		}
	}
	if a := chat[0].Attrs; a["gen_ai.usage.input_tokens"] != int64(50) || a["gen_ai.usage.output_tokens"] != int64(3) ||
		a["gen_ai.provider.name"] != "ollama" || a["gen_ai.request.model"] != "llama3.1" || a["gen_ai.operation.name"] != "chat" || chat[0].Kind != "client" {
		t.Errorf("chat span %+v", chat[0])
	}
	if a := exec[0].Attrs; a["gen_ai.tool.name"] != "weather" || a["gen_ai.tool.call.id"] == nil {
		t.Errorf("execute_tool attributes %v", a)
	}
	if r := root[0].Resource; r["service.name"] != "adaptbot-test" || r["deployment.environment"] != "test" {
		t.Errorf("resource %v", r)
	}
	if root[0].Scope != "adaptbot" {
		t.Errorf("scope %q", root[0].Scope)
	}
	for _, h := range rcv.Headers() {
		if h.Get("Authorization") != "Basic cGs6c2s=" {
			t.Errorf("export sent Authorization %q", h.Get("Authorization"))
		}
	}
	if telemetry.Tracing() {
		t.Error("tracing is still on after shutdown")
	}
}

// TestSetupOff: without an endpoint Setup does nothing and its shutdown
// is harmless.
func TestSetupOff(t *testing.T) {
	shutdown := setup(t, nil)
	if telemetry.Tracing() {
		t.Error("tracing on without an endpoint")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestProcessEnvironmentIgnored: what the SDK would read from the process
// environment by itself (headers, endpoint, sampler, protocol,
// compression, certificate, service name, resource, batch size) changes
// nothing: the getenv values are the only source. It runs in a child
// process, so that this process's environment is never touched.
func TestProcessEnvironmentIgnored(t *testing.T) {
	if url := os.Getenv("TELEMETRY_CHILD_RECEIVER"); url != "" {
		shutdown := setup(t, map[string]string{telemetry.EnvEndpoint: url})
		_, s := telemetry.StartOperation(context.Background(), "run", "calc", "r", "cli")
		s.End("", nil)
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		return
	}
	rcv := telemetrytest.NewReceiver(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessEnvironmentIgnored$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"TELEMETRY_CHILD_RECEIVER="+rcv.URL,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:9/nowhere",
		"OTEL_EXPORTER_OTLP_HEADERS=x-leaked=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-leaked-too=1",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
		"OTEL_EXPORTER_OTLP_COMPRESSION=gzip",
		"OTEL_EXPORTER_OTLP_CERTIFICATE=/nonexistent/ca.pem",
		"OTEL_EXPORTER_OTLP_INSECURE=false",
		"OTEL_TRACES_SAMPLER=always_off",
		"OTEL_SERVICE_NAME=leaked",
		"OTEL_RESOURCE_ATTRIBUTES=leaked=1",
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=0",
		"OTEL_SDK_DISABLED=true",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	spans := rcv.WaitFor(t, 10*time.Second, func(s []telemetrytest.Span) bool { return len(s) > 0 })
	if p := rcv.Problems(); len(p) > 0 {
		t.Fatalf("the receiver refused exports (protobuf, uncompressed expected): %q", p)
	}
	s := spans[0]
	if s.Name != "run calc" || s.Resource["service.name"] != "adaptbot" || s.Resource["leaked"] != nil || len(s.Attrs) == 0 {
		t.Errorf("span %+v took something from the process environment", s)
	}
	for _, h := range rcv.Headers() {
		for k := range h {
			if strings.HasPrefix(strings.ToLower(k), "x-leaked") || h.Get("Content-Encoding") == "gzip" {
				t.Errorf("export carried %s from the process environment", k)
			}
		}
	}
}
