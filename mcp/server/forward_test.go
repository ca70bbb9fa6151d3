package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/poll"
	"adaptbot/registry"
	"adaptbot/toolbox"
)

// TestForwarderRelaysToolsCallsAndChanges: a stdio client of a Forwarder
// sees the server's tools as the server lists them (output schemas
// included), gets each result as the server sent it (structured content
// included), hears the server's list_changed, and keeps working after
// the server lost its session (a restart): the call is sent again on a new
// session, since it never ran.
func TestForwarderRelaysToolsCallsAndChanges(t *testing.T) {
	w := shippedWorld(t, "calculator", "text_stats")
	srv := New(toolbox.New(w.reg, w.runner), Options{})
	var handler atomic.Pointer[http.Handler]
	h := srv.Handler()
	handler.Store(&h)
	var sessions sync.Map // the session IDs requests carried
	count := func() (n int) {
		sessions.Range(func(any, any) bool { n++; return true })
		return n
	}
	var auth atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			sessions.Store(id, true)
		}
		auth.Store(r.Header.Get("Authorization"))
		(*handler.Load()).ServeHTTP(rw, r)
	}))
	defer hs.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := Dial(ctx, ForwardOptions{URL: hs.URL, Header: http.Header{"Authorization": {"Bearer k1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- f.ServeStdio(ctx, inR, outW); outW.Close() }()
	changed := make(chan struct{}, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "text_stats" && tool.OutputSchema == nil {
			t.Error("text_stats lost its output schema on the way")
		}
	}
	if !slices.Equal(names, []string{"calculator", "text_stats"}) {
		t.Errorf("tools/list = %v", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "text_stats", Arguments: map[string]any{"text": "The cat sat."}})
	if err != nil || res.IsError || res.StructuredContent == nil {
		t.Errorf("text_stats = %+v, %v; want a result with structured content", res, err)
	}
	if got := auth.Load(); got != "Bearer k1" {
		t.Errorf("the server got Authorization %q, want the caller's key", got)
	}
	if text, isErr := callText(t, cs, "calculator", map[string]any{"expr": "1"}); !isErr || text == "" {
		t.Errorf("a bad call = %q, isError %v; want the server's tool error", text, isErr)
	}

	// A tool the server takes in reaches the client.
	if _, err := w.reg.Put(ctx, "echo", []byte(echoSource("echo", "echoes text.")), registry.PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
		t.Fatal(err)
	}
	waitChanged(t, changed, "a tool added on the server")
	poll.Until(t, "echo in tools/list", func() bool { return slices.Contains(toolNames(t, cs), "echo") })
	if text, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"}); isErr || text != "echo: hi" {
		t.Errorf("echo = %q, %v", text, isErr)
	}

	// The server restarts: its sessions are gone.
	fresh := srv.Handler()
	handler.Store(&fresh)
	before := count()
	if text, isErr := callText(t, cs, "calculator", map[string]any{"expression": "6*7"}); isErr || text != "6*7 = 42" {
		t.Errorf("calculator after the server lost the session = %q, isError %v", text, isErr)
	}
	if n := count() - before; n != 1 {
		t.Errorf("%d new sessions after the server lost one, want 1", n)
	}

	// The client leaves: every request read has been answered. (Under
	// 2025-06-18: a client of a later version keeps a subscriptions/listen
	// request open, which is answered only when the session ends.)
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	cs.Close()
}
