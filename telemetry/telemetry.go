// Package telemetry is what an operator plugs in: OpenTelemetry traces that
// follow the GenAI semantic conventions (an invoke_agent span per chat, a
// "chat {model}" span per model call, an "execute_tool {name}" span per
// tool call, nested calls included, and spans for builds, gate stages and
// sandbox calls), exported over OTLP/HTTP, and Prometheus metrics on a
// registry of its own.
//
// Tracing is off unless Setup is given an endpoint, and costs nothing then:
// every Start helper returns at once, with the context it was given and a
// span whose methods do nothing. Metrics are counted only by a *Metrics the
// caller made; a nil *Metrics counts nothing.
//
// It reads no setting from the process environment (the caller hands it a
// getenv), installs nothing global but the tracer provider Setup makes, and
// must not import any AdaptBot package but the leaves llm and clip: the
// packages it instruments (toolbox, sandbox, generator, mcp/client) import
// it.
package telemetry

import (
	"context"
	"strconv"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"adaptbot/clip"
)

// scope names AdaptBot's tracer: the instrumentation scope of its spans.
const scope = "adaptbot"

// state is what the helpers need while tracing is on.
type state struct {
	tracer  trace.Tracer
	content bool // attach arguments, results and messages
}

// current is nil while tracing is off: the one check every helper makes.
var current atomic.Pointer[state]

// Enable makes the helpers open spans on tp, with content (tool arguments
// and results, model messages) attached when content is set. Setup calls
// it; tests call it with a tracetest provider. restore puts back what was
// there before.
func Enable(tp trace.TracerProvider, content bool) (restore func()) {
	prev := current.Swap(&state{tracer: tp.Tracer(scope), content: content})
	return func() { current.Store(prev) }
}

// Tracing reports whether spans are being made.
func Tracing() bool { return current.Load() != nil }

// propagator reads and writes the W3C traceparent and tracestate headers.
// It is ours, not the global one, so that a caller's trace is carried on to
// MCP servers even while our own tracing is off.
var propagator = propagation.TraceContext{}

// Extract returns ctx carrying the caller's trace from the request's W3C
// traceparent and tracestate headers, read through header (fiber's c.Get,
// or an http.Header's Get). Spans started from it join the caller's trace;
// without those headers ctx comes back as it was.
func Extract(ctx context.Context, header func(string) string) context.Context {
	if header("traceparent") == "" {
		return ctx
	}
	return propagator.Extract(ctx, headerFunc(header))
}

// headerFunc reads headers for the propagator.
type headerFunc func(string) string

func (h headerFunc) Get(key string) string { return h(key) }
func (h headerFunc) Set(string, string)    {}
func (h headerFunc) Keys() []string        { return []string{"traceparent", "tracestate"} }

// maxContent caps one attribute of content: arguments, results, messages.
const maxContent = 16 << 10

// cut returns s cut to maxContent bytes at a character boundary, with a
// marker saying how long it was.
func cut(s string) string {
	if len(s) <= maxContent {
		return s
	}
	return clip.Prefix(s, maxContent) + "…[cut, " + strconv.Itoa(len(s)) + " bytes]"
}
