package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestStreamHandlerKeepsAFlushedQuickAnswer: a handler that writes an
// event, flushes and returns at once (how the MCP SDK answers a ping) must
// reach the client every time. Both "done" and "streaming" are then ready;
// when the bridge took "done" it sent the emptied buffer, and the client
// waited for an answer that never came (a conformance run timed out on
// ping this way). The race needs the handler to finish before the bridge
// reaches its select, which a loaded machine makes likely and an idle one
// rare, so the invariant the bridge relies on is checked first: a writer
// that has flushed never offers its (emptied) buffer as the response.
func TestStreamHandlerKeepsAFlushedQuickAnswer(t *testing.T) {
	sw := newStreamWriter()
	sw.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(sw, "event: message\n")
	sw.Flush()
	sw.finish()
	if _, _, body, ok := sw.buffered(); ok {
		t.Fatalf("a flushed writer offers its buffer %q as the whole response", body)
	}

	const event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	app := fiber.New()
	app.Post("/mcp", streamHandler(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, event)
		w.(http.Flusher).Flush()
	})))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	t.Cleanup(func() { app.Shutdown() })
	for i := range 300 {
		resp, err := http.Post("http://"+ln.Addr().String()+"/mcp", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != event {
			t.Fatalf("request %d: body %q, err %v; want the flushed event", i, body, err)
		}
	}
}

type bridgeKey struct{}

// TestStreamHandlerKeepsTheRequestsContext: the net/http handler behind the
// bridge (/mcp) runs under everything the edge put in the request's
// context (who calls, the door, the trace, and whatever a middleware adds
// later), not a hand-made copy of some of it; and it still ends when the
// server's context does.
func TestStreamHandlerKeepsTheRequestsContext(t *testing.T) {
	base, stop := context.WithCancel(context.Background())
	defer stop()
	ended := make(chan struct{})
	app := fiber.New()
	app.Use(func(c *fiber.Ctx) error {
		c.SetUserContext(context.WithValue(c.UserContext(), bridgeKey{}, "carried"))
		return c.Next()
	})
	app.Post("/mcp", streamHandler(base, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, _ := r.Context().Value(bridgeKey{}).(string)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+v+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the stream stays open until the server's context ends
		close(ended)
	})))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Listener(ln)
	t.Cleanup(func() { app.Shutdown() })
	resp, err := http.Post("http://"+ln.Addr().String()+"/mcp", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make([]byte, len("data: carried\n"))
	if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "data: carried\n" {
		t.Fatalf("the handler read %q (%v); want the value the middleware put in the context", line, err)
	}
	stop()
	<-ended
}
