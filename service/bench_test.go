package service_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/identity"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/traces"
)

// instant is a tool that answers at once: what remains of a run is the
// service's own work.
type instant struct{}

func (instant) Spec() toolbox.Spec {
	return toolbox.Spec{Name: "instant", Origin: adaptbot.OriginBuiltin, Version: 1, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (instant) Call(context.Context, json.RawMessage) (string, error) { return "ok", nil }

// box offers the instant tool alone.
type box struct{}

func (box) Tool(name string) (toolbox.Tool, bool) { return instant{}, name == "instant" }
func (box) Serving() []toolbox.Tool               { return []toolbox.Tool{instant{}} }
func (box) Len() int                              { return 1 }
func (box) OnChange(func(toolbox.Change))         {}

// discard takes rows and trace records and keeps nothing: the cost of
// writing them to disk is the logger's and the trace store's, measured in
// their own packages.
type discard struct{}

func (discard) Log(benchmarks.Row) error                 { return nil }
func (discard) Add(traces.Record) error                  { return nil }
func (discard) Get(string) (traces.Record, error)        { return traces.Record{}, traces.ErrNotFound }
func (discard) Recent(int) []traces.Record               { return nil }
func (discardExporter) Shutdown(context.Context) error   { return nil }
func (discardExporter) ForceFlush(context.Context) error { return nil }

// discardExporter receives batches of spans and drops them.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }

// BenchmarkRunLifecycle measures what the service adds to a direct run: the
// request ID, the permission check, the span, the row and the trace record
// built (and handed to a sink that keeps nothing), the metrics; against the
// bare tool call. With tracing on, the spans go through a batching span
// processor, as the OTLP exporter's do, to an exporter that drops them.
func BenchmarkRunLifecycle(b *testing.B) {
	args := json.RawMessage(`{"x": 1}`)
	ctx := identity.With(context.Background(), identity.Local)
	b.Run("bare call", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := (instant{}).Call(ctx, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name             string
		metrics, tracing bool
	}{{"service", false, false}, {"service+metrics", true, false}, {"service+metrics+tracing", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			d := service.Deps{Tools: box{}, Rows: discard{}, Traces: discard{}}
			if bc.metrics {
				d.Metrics = telemetry.NewMetrics()
			}
			if bc.tracing {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
				defer tp.Shutdown(context.Background())
				defer telemetry.Enable(tp, false)()
			}
			svc := service.New(d)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := svc.Run(ctx, "instant", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
