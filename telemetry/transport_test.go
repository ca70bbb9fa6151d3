package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestTransport: requests made inside a span carry its traceparent to the
// server; a caller's trace passes through while our tracing is off; a
// request with no trace, or with its own traceparent, goes out as it was.
func TestTransport(t *testing.T) {
	var (
		mu  sync.Mutex
		got []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	defer srv.Close()
	client := &http.Client{Transport: Transport(nil)}
	send := func(ctx context.Context, header string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, nil)
		if header != "" {
			req.Header.Set("traceparent", header)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if header == "" && req.Header.Get("traceparent") != "" {
			t.Error("the transport changed the caller's request")
		}
	}

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	remote := Extract(context.Background(), func(k string) string { return map[string]string{"traceparent": caller}[k] })
	send(remote, "")                  // tracing off: the caller's trace passes through
	send(context.Background(), "")    // no trace: no header
	send(remote, "00-mine-mine-mine") // its own header wins

	exp := record(t, false)
	ctx, tool := StartTool(remote, "files/read", true, nil)
	send(ctx, "")
	tool.End("", "ok", nil)
	span := exp.GetSpans()[0]

	mu.Lock()
	defer mu.Unlock()
	want := []string{caller, "", "00-mine-mine-mine",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-" + span.SpanContext.SpanID().String() + "-01"}
	if len(got) != len(want) {
		t.Fatalf("server saw %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: traceparent %q, want %q", i, got[i], want[i])
		}
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Error("no span in the tool's context")
	}
}
