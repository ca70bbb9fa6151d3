package web

import (
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"adaptbot/identity"
)

// BenchmarkAdmit is what taking and giving back an in-flight slot costs a
// request: the one local user of a loopback server (no share to count)
// and a signed-in person (their share counted too).
func BenchmarkAdmit(b *testing.B) {
	for _, bc := range []struct {
		name string
		who  identity.Identity
	}{
		{"loopback", identity.Local},
		{"person", identity.Identity{Name: "ann", Role: identity.User, Pseudonym: "u-0123456789abcdef", Method: identity.Key}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := newLimits(Limits{}.WithDefaults(), rateKey)
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			app.Use(func(c *fiber.Ctx) error {
				c.SetUserContext(identity.With(c.UserContext(), bc.who))
				return c.Next()
			})
			app.Post("/x", l.admit(), func(c *fiber.Ctx) error { return c.SendString("ok") })
			var req fasthttp.Request
			req.Header.SetMethod("POST")
			req.SetRequestURI("/x")
			serveInMemory(b, app.Handler(), &req)
		})
	}
}

// BenchmarkEdgeMiddleware isolates what the edge's middleware (security
// headers and the Host, Origin and Content-Type checks) adds to a request:
// the same trivial handler with and without it, in memory.
func BenchmarkEdgeMiddleware(b *testing.B) {
	s := &Server{opts: Options{Addr: "127.0.0.1:3000", Limits: Limits{}.WithDefaults()}}
	for _, bc := range []struct {
		name   string
		guard  bool
		method string
	}{{"GET/bare", false, "GET"}, {"GET/guarded", true, "GET"}, {"POST/bare", false, "POST"}, {"POST/guarded", true, "POST"}} {
		b.Run(bc.name, func(b *testing.B) {
			app := fiber.New(fiber.Config{DisableStartupMessage: true})
			if bc.guard {
				app.Use(securityHeaders(), s.sameSite())
			}
			app.All("/x", func(c *fiber.Ctx) error { return c.SendString("ok") })
			var req fasthttp.Request
			req.Header.SetMethod(bc.method)
			req.SetRequestURI("/x")
			req.Header.SetHost("127.0.0.1:3000")
			if bc.method == "POST" {
				req.Header.SetContentType("application/json")
				req.Header.Set("Origin", "http://127.0.0.1:3000")
				req.SetBodyString(`{}`)
			}
			serveInMemory(b, app.Handler(), &req)
		})
	}
}

// serveInMemory times h answering req b.N times, in memory, from a
// loopback client; every answer must be 200.
func serveInMemory(b *testing.B, h fasthttp.RequestHandler, req *fasthttp.Request) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	for b.Loop() {
		ctx.Init(req, addr, nil)
		h(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
