package main

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"adaptbot/web"
)

// listening is the edge s serving on loopback for the test, and a client
// of it: tests send it requests as a client does, over a connection.
func listening(tb testing.TB, s *web.Server) *edgeClient {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go s.Serve(ln)
	tb.Cleanup(func() { s.Shutdown(context.Background()) })
	return &edgeClient{addr: ln.Addr().String()}
}

// edgeClient sends requests to a listening edge.
type edgeClient struct{ addr string }

// Test sends req (made with httptest.NewRequest: a path, and the Host it
// names) to the edge and returns its answer.
func (e *edgeClient) Test(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "http", e.addr
	return http.DefaultTransport.RoundTrip(out)
}

// serveInMemory times the edge s answering req b.N times, over an
// in-memory connection from a loopback client; every answer must be 200.
func serveInMemory(b *testing.B, s interface{ Serve(net.Listener) error }, req *fasthttp.Request) {
	ln := fasthttputil.NewInmemoryListener()
	go s.Serve(ln)
	defer ln.Close()
	c := &fasthttp.HostClient{Addr: "127.0.0.1:3000", Dial: func(string) (net.Conn, error) { return ln.Dial() }, MaxConns: 1}
	var resp fasthttp.Response
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Do(req, &resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
	}
}

// withMCP is o serving h at /mcp.
func withMCP(o web.Options, h http.Handler) web.Options {
	o.MCP = h
	return o
}
