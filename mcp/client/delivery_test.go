package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/config"
)

// runs returns how many times the counting tools ran with file.
func runs(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func fileArgs(file string) json.RawMessage {
	b, _ := json.Marshal(fileIn{File: file})
	return b
}

// A stdio server that dies while running a call has run it (or may have):
// the call fails with an error that says so, and is not sent again.
func TestHubCallNotRetriedWhenTheServerDiesDuringIt(t *testing.T) {
	h := newHub(t, []config.Server{helperConfig(t, "helper")}, Options{Timeout: 10 * time.Second})
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "runs")

	_, err := h.Call(ctx, "helper", "crash", fileArgs(file))
	if err == nil {
		t.Fatal("crash answered")
	}
	for _, want := range []string{"helper/crash: the connection to server helper was lost during the call", "may or may not have run", "not sent again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to say %q", err, want)
		}
	}
	if n := runs(t, file); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	// The next call reconnects.
	if out, err := h.Call(ctx, "helper", "count", fileArgs(file)); err != nil || out != "counted" {
		t.Fatalf("the call after the crash = %q, %v; want a reconnect", out, err)
	}
	if n := runs(t, file); n != 2 {
		t.Errorf("the tools ran %d times, want 2", n)
	}
}

// A stdio server that stopped reading its stdin before the call was written
// never saw it: the hub reconnects and sends it, once.
func TestHubRetriesACallThatWasNotSent(t *testing.T) {
	cfg := helperConfig(t, "deaf")
	dir := t.TempDir()
	cfg.Env = map[string]string{helperEnv: "deaf-once", onceEnv: filepath.Join(dir, "once")}
	h := newHub(t, []config.Server{cfg}, Options{Timeout: 10 * time.Second})
	ctx := context.Background()
	if _, errs := h.List(ctx); len(errs) > 0 {
		t.Fatal(errs)
	}
	file := filepath.Join(dir, "runs")
	out, err := h.Call(ctx, "deaf", "count", fileArgs(file))
	if err != nil || out != "counted" {
		t.Fatalf("Call = %q, %v; want a reconnect and an answer", out, err)
	}
	if n := runs(t, file); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}

// countingServer is a server whose "count" tool counts its runs in n.
func countingServer(n *atomic.Int32) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "counter", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "count", Description: "Counts its runs."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(n.Add(1))}}}, nil, nil
		})
	return s
}

// dropAfterCall serves h, except that it drops the connection of the first
// tools/call after running it, answering nothing: an HTTP server that died
// (or a network that failed) between running the call and answering it.
type dropAfterCall struct {
	h       http.Handler
	dropped atomic.Bool
}

func (d *dropAfterCall) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"tools/call"`)) || d.dropped.Swap(true) {
		d.h.ServeHTTP(w, r)
		return
	}
	d.h.ServeHTTP(discard{header: http.Header{}}, r) // runs the tool
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// discard is a ResponseWriter that sends nothing.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
func (d discard) Flush()                      {}

func TestHubHTTPCallNotRetriedWhenTheConnectionDropsDuringIt(t *testing.T) {
	var n atomic.Int32
	srv := countingServer(&n)
	ts, sw := serveHTTP(t, srv)
	sw.set(&dropAfterCall{h: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: true})})
	h := newHub(t, []config.Server{{Name: "counter", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	ctx := context.Background()

	_, err := h.Call(ctx, "counter", "count", nil)
	if err == nil || !strings.Contains(err.Error(), "counter/count: the connection to server counter was lost during the call, so the call may or may not have run") {
		t.Fatalf("err = %v, want one that says the call may or may not have run", err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("the tool ran %d times, want 1", got)
	}
	if out, err := h.Call(ctx, "counter", "count", nil); err != nil || out != "2" {
		t.Errorf("the next call = %q, %v; want it to run (the second run)", out, err)
	}
}

// A restarted HTTP server answers the old session's call with 404: it ran
// nothing, so the hub reconnects and sends the call, which runs once.
func TestHubHTTPRetriesACallTheServerRefused(t *testing.T) {
	var before, after atomic.Int32
	ts, sw := serveHTTP(t, countingServer(&before))
	h := newHub(t, []config.Server{{Name: "counter", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	ctx := context.Background()
	if out, err := h.Call(ctx, "counter", "count", nil); err != nil || out != "1" {
		t.Fatalf("first call = %q, %v", out, err)
	}
	restarted := countingServer(&after)
	sw.set(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return restarted }, nil))
	if out, err := h.Call(ctx, "counter", "count", nil); err != nil || out != "1" {
		t.Fatalf("call after the restart = %q, %v; want a reconnect and one run", out, err)
	}
	if b, a := before.Load(), after.Load(); b != 1 || a != 1 {
		t.Errorf("runs: %d before the restart, %d after; want 1 and 1", b, a)
	}
}

func TestDeliveryTransport(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			http.NotFound(w, r)
		case "/drop":
			io.ReadAll(r.Body)
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}
	}))
	t.Cleanup(ts.Close)
	client := httpClient(nil)
	post := func(url string, m *callMark) error {
		ctx := context.Background()
		if m != nil {
			ctx = withCallMark(ctx, m)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"method":"tools/call"}`))
		req.Header.Set("Mcp-Session-Id", "s1") // as the SDK sets it once it has a session
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	m := &callMark{}
	err := post("http://127.0.0.1:1/mcp", m) // nothing listens on port 1
	if ns, ok := errors.AsType[*notSentError](err); !ok || ns.mark != m || !undelivered(err, m) {
		t.Errorf("refused connection: err = %v, want a notSentError for the call", err)
	}
	if err := post("http://127.0.0.1:1/mcp", nil); err == nil || undelivered(err, m) {
		t.Errorf("a request of no call: err = %v, want a plain error", err)
	}

	m = &callMark{}
	err = post(ts.URL+"/drop", m)
	if err == nil || undelivered(err, m) || !connectionLost(err) {
		t.Errorf("dropped after the request was written: err = %v, want a lost connection that may have delivered it", err)
	}

	m = &callMark{}
	if err := post(ts.URL+"/gone", m); err != nil || !m.refused.Load() {
		t.Errorf("404 for the session: err = %v, refused = %v; want it noted", err, m.refused.Load())
	}
}

func TestUndelivered(t *testing.T) {
	mine, other := &callMark{}, &callMark{}
	refused := &callMark{}
	refused.refused.Store(true)
	tests := []struct {
		name string
		err  error
		mark *callMark
		want bool
	}{
		{"connection already closed", fmt.Errorf("calling %q: %w", "tools/call", sdk.ErrConnectionClosed), mine, true},
		{"stdin write failed first", fmt.Errorf("calling: %w", &notSentError{err: syscall.EPIPE}), mine, true},
		{"this call's request not written", fmt.Errorf("sending: %w", &notSentError{mark: mine, err: syscall.ECONNREFUSED}), mine, true},
		{"another request not written", fmt.Errorf("stream: %w", &notSentError{mark: other, err: syscall.ECONNREFUSED}), mine, false},
		{"session missing, this call refused", fmt.Errorf("x: %w", sdk.ErrSessionMissing), refused, true},
		{"this call refused, explained in JSON-RPC", fmt.Errorf("x: %w", &jsonrpc.Error{Code: -32001, Message: "Session not found"}), refused, true},
		{"session missing, noticed elsewhere", fmt.Errorf("x: %w", sdk.ErrSessionMissing), mine, false},
		{"read failed", fmt.Errorf("calling: %w", io.EOF), mine, false},
		{"write failed midway", fmt.Errorf("calling: %w", syscall.EPIPE), mine, false},
	}
	for _, tt := range tests {
		if got := undelivered(tt.err, tt.mark); got != tt.want {
			t.Errorf("%s: undelivered(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
