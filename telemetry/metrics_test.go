package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"adaptbot/llm"
)

// scrape reads the metrics as Prometheus would.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// has fails unless the scrape holds each line.
func has(t *testing.T, body string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(body, "\n"+l+"\n") {
			t.Errorf("the scrape lacks %q", l)
		}
	}
}

// TestMetricsScrape: a chat that made three model calls and one tool call,
// a direct run and a build, as the service, the model decorator and the
// toolbox count them, read back from the handler.
func TestMetricsScrape(t *testing.T) {
	m := NewMetrics()
	defer Use(m)()
	model := WrapModel(answering("openai/gpt-4o-mini", 100, 20), m)
	for range 3 {
		model.Generate(context.Background(), llm.Request{}) //nolint:errcheck // a fake
	}
	failing := WrapModel(&fakeModel{name: "openai/gpt-4o-mini", generate: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, &llm.Error{Kind: llm.Timeout}
	}}, m)
	failing.Generate(context.Background(), llm.Request{}) //nolint:errcheck // counted
	_, tool := StartTool(context.Background(), "weather", false, nil)
	tool.End("4°C", "ok", nil)
	_, tool = StartTool(context.Background(), "calculator", false, nil)
	tool.End("", "invalid_arguments", errors.New("bad"))
	m.Request("http", "CHAT", "weather", "ok", 1500*time.Millisecond)
	m.Request("mcp", "RUN", "calculator", "failed", 3*time.Millisecond)
	m.Build("create", "ok", 12*time.Second)
	if err := m.WatchSandbox(func() SandboxStats { return SandboxStats{Size: 2, Live: 2, Busy: 1, Restarts: 3} }); err != nil {
		t.Fatal(err)
	}
	if err := m.WatchCluster(func() ClusterStats { return ClusterStats{Connected: true, Spooled: 7} }); err != nil {
		t.Fatal(err)
	}

	body := scrape(t, m)
	has(t, body,
		`adaptbot_requests_total{door="http",intent="CHAT",outcome="ok",path="weather"} 1`,
		`adaptbot_requests_total{door="mcp",intent="RUN",outcome="failed",path="calculator"} 1`,
		`adaptbot_request_duration_seconds_bucket{door="http",intent="CHAT",le="2.5"} 1`,
		`adaptbot_request_duration_seconds_bucket{door="http",intent="CHAT",le="1"} 0`,
		`adaptbot_request_duration_seconds_count{door="http",intent="CHAT"} 1`,
		`adaptbot_model_calls_total{model="gpt-4o-mini",outcome="ok",provider="openai"} 3`,
		`adaptbot_model_calls_total{model="gpt-4o-mini",outcome="timeout",provider="openai"} 1`,
		`adaptbot_model_tokens_total{model="gpt-4o-mini",provider="openai",type="input"} 300`,
		`adaptbot_model_tokens_total{model="gpt-4o-mini",provider="openai",type="output"} 60`,
		`adaptbot_model_call_duration_seconds_count{model="gpt-4o-mini",provider="openai"} 4`,
		`adaptbot_tool_calls_total{outcome="ok",tool="weather"} 1`,
		`adaptbot_tool_calls_total{outcome="invalid_arguments",tool="calculator"} 1`,
		`adaptbot_tool_call_duration_seconds_count{tool="weather"} 1`,
		`adaptbot_builds_total{action="create",outcome="ok"} 1`,
		`adaptbot_build_duration_seconds_bucket{action="create",le="20"} 1`,
		`adaptbot_sandbox_workers 2`,
		`adaptbot_sandbox_workers_live 2`,
		`adaptbot_sandbox_workers_busy 1`,
		`adaptbot_sandbox_worker_restarts_total 3`,
		`adaptbot_cluster_nats_connected 1`,
		`adaptbot_cluster_rows_spooled 7`,
	)
	for _, runtime := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes"} {
		if !strings.Contains(body, "\n"+runtime+" ") {
			t.Errorf("the scrape lacks the runtime metric %s", runtime)
		}
	}
	if err := m.WatchSandbox(func() SandboxStats { return SandboxStats{} }); err == nil {
		t.Error("a second sandbox collector was accepted")
	}
}

// TestLabelsBounded: past MaxToolLabels tools every new one is "other";
// a tool that was not found, a name that is not UTF-8 or too long, never
// becomes a label.
func TestLabelsBounded(t *testing.T) {
	m := NewMetrics()
	m.ToolCall("ghost", "not_found", time.Millisecond)
	m.ToolCall("bad\xff", "ok", time.Millisecond)
	m.ToolCall(strings.Repeat("x", 200), "ok", time.Millisecond)
	for i := range MaxToolLabels + 50 {
		m.ToolCall(fmt.Sprintf("tool_%03d", i), "ok", time.Millisecond)
	}
	m.ToolCall("tool_000", "ok", time.Millisecond) // kept: seen before the cap
	m.Request("http", "RUN", "ghost", "not_found", time.Millisecond)
	body := scrape(t, m)
	has(t, body,
		`adaptbot_tool_calls_total{outcome="not_found",tool="other"} 1`,
		`adaptbot_tool_calls_total{outcome="ok",tool="other"} 52`,
		`adaptbot_tool_calls_total{outcome="ok",tool="tool_000"} 2`,
		`adaptbot_requests_total{door="http",intent="RUN",outcome="not_found",path="other"} 1`,
	)
	if n := strings.Count(body, "adaptbot_tool_calls_total{"); n != MaxToolLabels+2 {
		t.Errorf("%d tool call series, want %d (the cap, plus other twice)", n, MaxToolLabels+2)
	}
	for _, leaked := range []string{"ghost", "xxxxxxxxxxxxxxxxxxxx", "tool_149"} {
		if strings.Contains(body, leaked) {
			t.Errorf("%q became a label", leaked)
		}
	}
}

// TestNilMetrics: a nil *Metrics counts nothing and does not fail.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.Request("http", "CHAT", "general", "ok", time.Second)
	m.ToolCall("x", "ok", time.Second)
	m.Build("create", "ok", time.Second)
	m.ModelCall("openai", "m", "ok", llm.Usage{}, time.Second)
}
