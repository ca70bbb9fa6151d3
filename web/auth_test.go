package web

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"adaptbot/auth"
	"adaptbot/identity"
	"adaptbot/identity/users"
)

// BenchmarkAuthMiddleware is what establishing the identity adds to a
// request at the edge, in memory: compare "none" (no middleware) with a
// key, a session cookie, and the loopback single user.
func BenchmarkAuthMiddleware(b *testing.B) {
	bench := func(b *testing.B, env func(authSetup) authSetup, setup func(e *Auth, store *users.Store, req *fasthttp.Request)) {
		st := authSetup{loopback: false, adminToken: "tok-for-the-bench"}
		if env != nil {
			st = env(st)
		}
		log := slog.New(slog.DiscardHandler)
		e, store := openAuth(b, st)
		app := fiber.New(fiber.Config{ErrorHandler: errorHandler(log), DisableStartupMessage: true})
		if setup != nil {
			app.Use(e.authenticate())
		}
		app.Get("/api/x", func(c *fiber.Ctx) error { return c.SendString("ok") })
		h := app.Handler()
		var req fasthttp.Request
		req.Header.SetMethod("GET")
		req.SetRequestURI("/api/x")
		req.Header.SetHost("127.0.0.1:3000")
		if setup != nil {
			setup(e, store, &req)
		}
		addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
		var ctx fasthttp.RequestCtx
		b.ReportAllocs()
		for b.Loop() {
			ctx.Init(&req, addr, nil)
			h(&ctx)
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
			}
		}
	}
	b.Run("none", func(b *testing.B) { bench(b, nil, nil) })
	b.Run("loopback", func(b *testing.B) {
		bench(b, func(authSetup) authSetup { return authSetup{loopback: true} }, func(*Auth, *users.Store, *fasthttp.Request) {})
	})
	b.Run("key", func(b *testing.B) {
		bench(b, nil, func(e *Auth, store *users.Store, req *fasthttp.Request) {
			for i := range 50 {
				store.Add(context.Background(), "user"+strings.Repeat("x", i), identity.User)
			}
			_, key, err := store.Add(context.Background(), "bench", identity.Builder)
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+key)
		})
	})
	b.Run("session", func(b *testing.B) {
		bench(b, nil, func(e *Auth, store *users.Store, req *fasthttp.Request) {
			_, key, _ := store.Add(context.Background(), "bench", identity.Builder)
			cookie, _, _ := e.auth.KeyLogin(context.Background(), key)
			req.Header.SetCookie(auth.SessionCookie, cookie)
		})
	})
}

// TestRateKeyIsPerPerson: the rate limit counts a signed-in person by
// their pseudonym, and anyone else by their address.
func TestRateKeyIsPerPerson(t *testing.T) {
	e, store := openAuth(t, authSetup{adminToken: "tok-for-the-tests"})
	_, a, err := store.Add(context.Background(), "ann", identity.User)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := store.Add(context.Background(), "ben", identity.User)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Use(e.authenticate())
	app.Get("/k", func(c *fiber.Ctx) error { return c.SendString(rateKey(c)) })
	app.Get("/login", func(c *fiber.Ctx) error { return c.SendString(rateKey(c)) })
	key := func(path, auth string) string {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:3000"+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	ka, kb, anon := key("/k", a), key("/k", b), key("/login", "")
	if !strings.HasPrefix(ka, "id:u-") || ka == kb || !strings.HasPrefix(anon, "ip:") {
		t.Errorf("rate keys: ann %q, ben %q, anonymous %q", ka, kb, anon)
	}
}

// authSetup is how a test's server proves who calls it: on loopback or
// not, with an admin token or none.
type authSetup struct {
	loopback   bool
	adminToken string
}

// openAuth is the edge's identities over a users file in a temporary
// folder, as package main opens them for a server set up as st.
func openAuth(tb testing.TB, st authSetup) (*Auth, *users.Store) {
	tb.Helper()
	fb, err := users.OpenFile(filepath.Join(tb.TempDir(), "users.json"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fb.Close() })
	store, err := users.Open(context.Background(), fb)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := auth.New(auth.Settings{Loopback: st.loopback, AdminToken: st.adminToken, Users: store, SessionTTL: auth.DefaultSessionTTL})
	if err != nil {
		tb.Fatal(err)
	}
	return NewAuth(a, AuthOptions{Loopback: st.loopback, BackoffMax: 5 * time.Minute}, slog.New(slog.DiscardHandler)), store
}
