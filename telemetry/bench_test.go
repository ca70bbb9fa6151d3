package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"adaptbot/llm"
)

// instant is a model that answers at once, so that a benchmark measures
// the instrumentation around it and nothing else.
type instant struct{}

func (instant) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Content: "ok", Usage: llm.Usage{PromptTokens: 120, CompletionTokens: 8}}, nil
}
func (instant) Name() string { return "openai/gpt-4o-mini" }

// chat is the instrumented part of one chat as the service, the agent and
// the toolbox make it: an invoke_agent span, three model calls through the
// wrapped model, one tool call, and the request counted.
func chat(ctx context.Context, model llm.Model, m *Metrics) {
	ctx, agent := StartAgent(ctx, AgentStart{RequestID: "req-0123456789", Door: "http", Model: model, Message: "what is 6*7"})
	req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "what is 6*7"}}}
	model.Generate(ctx, req) //nolint:errcheck // instant
	_, tool := StartTool(WithToolCallID(ctx, "call_1"), "calculator", false, []byte(`{"expression":"6*7"}`))
	tool.End("42", "ok", nil)
	model.Generate(ctx, req) //nolint:errcheck // instant
	model.Generate(ctx, req) //nolint:errcheck // instant
	agent.End(AgentEnd{Intent: "CHAT", Path: "calculator", LLMCalls: 3, InputTokens: 360, OutputTokens: 24, Reply: "42"})
	m.Request("http", "CHAT", "calculator", "ok", 1200*time.Millisecond)
}

// BenchmarkChatInstrumentation is the cost of observing one chat with
// three model calls and one tool call. bare makes the same model calls
// with no instrumentation at all; the other cases' difference from it is
// what telemetry adds: off (no tracing, no metrics, as a CLI command
// runs), metrics (the server's default: counted, not traced), and traced
// (a batching OTLP/HTTP exporter posting to a loopback server that drops
// what it gets, plus metrics).
func BenchmarkChatInstrumentation(b *testing.B) {
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		var model llm.Model = instant{}
		req := llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "what is 6*7"}}}
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			for range 3 {
				model.Generate(ctx, req) //nolint:errcheck // instant
			}
		}
	})
	for _, bc := range []struct {
		name            string
		metrics, traced bool
	}{{"off", false, false}, {"metrics", true, false}, {"traced", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.traced {
				defer traceTo(b)()
			}
			var m *Metrics
			if bc.metrics {
				m = NewMetrics()
				defer Use(m)()
			}
			model := WrapModel(instant{}, m)
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				chat(ctx, model, m)
			}
		})
	}
}

// traceTo turns tracing on with the batching OTLP/HTTP exporter, posting
// to a loopback server that drops what it gets.
func traceTo(b *testing.B) (shutdown func()) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck // dropped
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	c, err := LoadConfig(func(k string) string { return map[string]string{EnvEndpoint: sink.URL}[k] })
	if err != nil {
		b.Fatal(err)
	}
	stop, err := Setup(context.Background(), c, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		stop(context.Background()) //nolint:errcheck // a benchmark
		sink.Close()
	}
}

// cpuPerOp reports the process's CPU time per op, every goroutine's (the
// exporter's included): on a shared machine wall time per op says more
// about the neighbours than about the code.
func cpuPerOp(b *testing.B) (report func()) {
	began := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-began)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck // cannot fail for RUSAGE_SELF
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkToolSpanOff is one tool call's instrumentation with tracing and
// metrics off, as the toolbox pays it on every call.
func BenchmarkToolSpanOff(b *testing.B) {
	ctx := context.Background()
	args := []byte(`{"expression":"6*7"}`)
	b.ReportAllocs()
	for b.Loop() {
		_, s := StartTool(ctx, "calculator", false, args)
		s.End("42", "ok", nil)
	}
}
