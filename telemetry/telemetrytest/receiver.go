// Package telemetrytest is an OTLP/HTTP receiver for tests: a loopback
// server that decodes the protobuf export requests AdaptBot's exporter
// sends and keeps their spans, so that a test can point
// OTEL_EXPORTER_OTLP_ENDPOINT at it and check what a collector would get.
//
// It is for tests only and must not be imported by production code.
package telemetrytest

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name            string
	Kind            string // "internal", "server", "client", ...
	TraceID, SpanID string // hex
	ParentID        string // hex; empty for a root
	Attrs           map[string]any
	Resource        map[string]any
	Scope           string
}

// Receiver is an OTLP/HTTP trace receiver on loopback.
type Receiver struct {
	// URL is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT; it
	// takes exports at URL + "/v1/traces".
	URL string

	mu       sync.Mutex
	spans    []Span
	headers  []http.Header // of each export
	problems []string
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// serve takes one export request, as a collector does.
func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.problem("unexpected %s %s", req.Method, req.URL.Path)
		http.NotFound(w, req)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.problem("Content-Type %q, want application/x-protobuf", ct)
		http.Error(w, "want protobuf", http.StatusUnsupportedMediaType)
		return
	}
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		r.problem("undecodable export: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					Name:     s.GetName(),
					Kind:     strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
					TraceID:  hex.EncodeToString(s.GetTraceId()),
					SpanID:   hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()),
					Attrs:    attrs(s.GetAttributes()),
					Resource: res,
					Scope:    ss.GetScope().GetName(),
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out) //nolint:errcheck // the exporter sees a short answer as a failure
}

func (r *Receiver) problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// attrs flattens OTLP attributes: strings, bools, int64s, float64s, and
// []any for arrays.
func attrs(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

// Spans returns the spans received so far, in the order they came.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Headers returns the headers of each export request received so far.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Problems returns what the receiver refused (a wrong path, content type
// or body), for the test to fail on.
func (r *Receiver) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}

// WaitFor polls until done holds for the spans received, and returns them;
// past the deadline it fails the test with the names it has.
func (r *Receiver) WaitFor(t testing.TB, within time.Duration, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		spans := r.Spans()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			names := make([]string, len(spans))
			for i, s := range spans {
				names[i] = s.Name
			}
			t.Fatalf("after %v the receiver has %d spans %q (problems: %q); the condition never held", within, len(spans), names, r.Problems())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Named returns the spans named name.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
