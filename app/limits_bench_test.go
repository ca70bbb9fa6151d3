package main

import (
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"adaptbot/config"
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
			l := newLimits(config.EdgeConfig{}.WithDefaults(), rateKey)
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
