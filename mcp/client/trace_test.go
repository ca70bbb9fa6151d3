package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"adaptbot/mcp/config"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
)

// TestHubHTTPCarriesTraceparent: a tool call to an MCP server over HTTP
// carries the trace it was made in, as a W3C traceparent naming the
// call's execute_tool span, so that a server that traces joins it.
func TestHubHTTPCarriesTraceparent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer telemetry.Enable(tp, false)()

	var (
		mu   sync.Mutex
		seen []string // traceparent of each tools/call
	)
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return weatherServer() }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(string(body), `"tools/call"`) {
				mu.Lock()
				seen = append(seen, r.Header.Get("traceparent"))
				mu.Unlock()
			}
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the hub closes (cleanups run last first)

	h := newHub(t, []config.Server{{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	if _, errs := h.List(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	box := toolbox.New(&fakeRegistry{}, nil)
	box.Join(h)
	tool, ok := box.Tool("weather/get_forecast")
	if !ok {
		t.Fatal("no weather/get_forecast in the toolbox")
	}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "invoke_agent")
	if _, err := tool.Call(ctx, json.RawMessage(`{"city":"Paris"}`)); err != nil {
		t.Fatal(err)
	}
	parent.End()

	var call tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool weather/get_forecast" {
			call = s
		}
	}
	if !call.SpanContext.IsValid() || call.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("no execute_tool span under the caller's: %+v", exp.GetSpans())
	}
	want := "00-" + call.SpanContext.TraceID().String() + "-" + call.SpanContext.SpanID().String() + "-01"
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != want {
		t.Errorf("the server saw traceparent %q, want [%q]", seen, want)
	}
}
