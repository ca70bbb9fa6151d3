package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// The batching span processor's settings. They are set here, not read from
// OTEL_BSP_*, so that the configuration has one source.
const (
	batchTimeout  = 5 * time.Second // the standard's default delay
	exportTimeout = 10 * time.Second
	maxQueue      = 2048
	maxBatch      = 512
)

// Setup starts exporting spans when c is on: an OTLP/HTTP protobuf exporter
// behind a batching span processor, installed as the global tracer provider
// (so that libraries using otel's global see it too) and as the helpers'.
// When c is off it does nothing: the helpers stay off and cost nothing.
//
// Everything the SDK would read from the process environment by itself
// (the exporter's OTEL_EXPORTER_OTLP_*, OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// the span limits, OTEL_RESOURCE_ATTRIBUTES) is passed explicitly from c
// or fixed here, so that the getenv c was loaded through is the only
// source. Failed exports are logged to log, at most once a minute.
//
// shutdown flushes the spans not yet sent and stops the exporter; call it
// once, at exit, with a deadline.
func Setup(ctx context.Context, c Config, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	if !c.On() {
		return func(context.Context) error { return nil }, nil
	}
	smp, err := sampler(c.Sampler, c.SamplerArg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvSampler, err)
	}
	exp, err := otlptracehttp.New(ctx, exporterOptions(c)...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := newResource(c)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(resourceExporter{exp, res},
			sdktrace.WithBatchTimeout(batchTimeout),
			sdktrace.WithExportTimeout(exportTimeout),
			sdktrace.WithMaxQueueSize(maxQueue),
			sdktrace.WithMaxExportBatchSize(maxBatch)),
		sdktrace.WithSampler(smp),
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(spanLimits()),
	)
	if log != nil {
		otel.SetErrorHandler(exportErrors(log, c))
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagator)
	restore := Enable(tp, c.Content)
	return func(ctx context.Context) error {
		restore()
		return tp.Shutdown(ctx)
	}, nil
}

// exporterOptions sets every option of the exporter that the environment
// could otherwise set: the URL (and with it http or https), the headers,
// the encoding, no compression, the timeout, and an HTTP client of our own,
// which also takes precedence over OTEL_EXPORTER_OTLP_CERTIFICATE and the
// other TLS variables.
func exporterOptions(c Config) []otlptracehttp.Option {
	headers := make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		headers[k] = v
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(c.URL),
		otlptracehttp.WithHeaders(headers), // non-nil: replaces OTEL_EXPORTER_OTLP_HEADERS
		otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression),
		otlptracehttp.WithTimeout(exportTimeout),
		otlptracehttp.WithTLSClientConfig(nil),
		otlptracehttp.WithHTTPClient(&http.Client{Transport: transport, Timeout: exportTimeout}),
	}
}

// newResource describes this process: OTEL_RESOURCE_ATTRIBUTES, then the
// SDK's name and version, the service's name and the instance, later
// values winning. No detector reads the environment.
func newResource(c Config) *resource.Resource {
	attrs := append([]attribute.KeyValue(nil), c.Resource...)
	attrs = append(attrs,
		semconv.TelemetrySDKName("opentelemetry"),
		semconv.TelemetrySDKLanguageGo,
		semconv.TelemetrySDKVersion(otel.Version()),
		semconv.ServiceName(c.ServiceName))
	if c.Instance != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(c.Instance))
	}
	return resource.NewWithAttributes(semconv.SchemaURL, attrs...)
}

// resourceExporter exports spans with res as their resource.
// sdktrace.WithResource merges the process environment's
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME into the provider's
// resource, under ours; this puts back exactly ours.
type resourceExporter struct {
	sdktrace.SpanExporter
	res *resource.Resource
}

func (e resourceExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = withResource{s, e.res}
	}
	return e.SpanExporter.ExportSpans(ctx, out)
}

// withResource is a span with another resource.
type withResource struct {
	sdktrace.ReadOnlySpan
	res *resource.Resource
}

func (s withResource) Resource() *resource.Resource { return s.res }

// spanLimits are the SDK's defaults, written out so that
// OTEL_SPAN_*_LIMIT in the process environment does not change them.
// Content is cut by cut, not by a value length limit.
func spanLimits() sdktrace.SpanLimits {
	return sdktrace.SpanLimits{
		AttributeValueLengthLimit:   -1,
		AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
		EventCountLimit:             sdktrace.DefaultEventCountLimit,
		LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
		AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
		AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
	}
}

// exportErrors logs the SDK's errors (failed exports, mostly), at most one
// a minute with the count of those not logged, so that a collector that is
// down does not flood the log.
func exportErrors(log *slog.Logger, c Config) otel.ErrorHandlerFunc {
	var last atomic.Int64 // unix nanoseconds of the last line logged
	var quiet atomic.Int64
	return func(err error) {
		now := time.Now().UnixNano()
		prev := last.Load()
		if now-prev < int64(time.Minute) || !last.CompareAndSwap(prev, now) {
			quiet.Add(1)
			return
		}
		log.Warn("tracing: spans not exported", "to", c.URL, "err", err, "more_since_last", quiet.Swap(0))
	}
}
