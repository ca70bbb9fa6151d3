package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Transport returns base (http.DefaultTransport when nil) carrying the
// trace of each request's context on to the server in a W3C traceparent
// header: the MCP client's calls to servers over HTTP use it, so that a
// server that traces joins the caller's trace. A request whose context
// holds no trace, or that already has a traceparent, goes out unchanged.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return transport{base}
}

type transport struct{ base http.RoundTripper }

// RoundTrip sends a copy of req with the trace headers added; a
// RoundTripper must not change the request it was given.
func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() || req.Header.Get("traceparent") != "" {
		return t.base.RoundTrip(req)
	}
	out := req.Clone(ctx)
	propagator.Inject(ctx, propagation.HeaderCarrier(out.Header))
	return t.base.RoundTrip(out)
}
