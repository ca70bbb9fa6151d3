// Package web is AdaptBot's HTTP edge: the Fiber routes, handlers and
// pages, the sign-in adapters, the limits and the cross-site rules. It
// decodes a request, establishes who sent it, asks the Service (an
// interface declared here, which *service.Service implements) and encodes
// the answer; it holds no registry, file or runner of its own. Package main
// (app/) wires it.
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/valyala/fasthttp"

	"adaptbot/config"
	"adaptbot/telemetry"
)

// Server is AdaptBot's HTTP edge: it decodes requests, asks the Service
// and encodes its answers. Fiber stays inside package web.
type Server struct {
	cfg     config.Config
	svc     Service
	mcp     fiber.Handler
	log     *slog.Logger
	app     *fiber.App
	auth    *Auth
	metrics *telemetry.Metrics
	limits  *limits
}

// Options are the edge's settings besides its three parts.
type Options struct {
	// Config is the server's configuration: the edge reads its address,
	// limits, review flag and model settings (for /healthz's hint).
	Config config.Config
	// Log takes the edge's errors; nil discards them.
	Log *slog.Logger
	// MCP serves /mcp (MCP's streamable HTTP transport, whose calls go
	// through the same Service); nil serves none.
	MCP http.Handler
	// Context ends the MCP streams still open when it ends: pass the one
	// whose end starts the shutdown. Nil is context.Background().
	Context context.Context
}

// NewServer wires the HTTP edge over svc. auth establishes who each
// request comes from; metrics are served at /metrics (nil serves none).
func NewServer(svc Service, auth *Auth, metrics *telemetry.Metrics, o Options) *Server {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	s := &Server{cfg: o.Config, svc: svc, log: o.Log, auth: auth, metrics: metrics}
	if o.MCP != nil {
		s.mcp = streamHandler(o.Context, o.MCP)
	}
	s.cfg.Edge = s.cfg.Edge.WithDefaults() // a Config built by hand has no limits
	s.limits = newLimits(s.cfg.Edge, rateKey)
	s.app = fiber.New(fiber.Config{
		AppName:               "AdaptBot",
		BodyLimit:             s.cfg.Edge.BodyLimit(),
		Immutable:             true, // handlers may keep strings past the request
		DisableStartupMessage: true,
		ErrorHandler:          s.refusals(errorHandler(o.Log)),
		ReadTimeout:           30 * time.Second,
		IdleTimeout:           2 * time.Minute,
	})
	s.app.Use(recover.New(), securityHeaders(), s.sameSite(), s.auth.authenticate(), s.door())
	s.routes()
	return s
}

// Shutdown stops accepting requests and waits for those under way.
func (s *Server) Shutdown(ctx context.Context) error { return s.app.ShutdownWithContext(ctx) }

// Route is one endpoint the edge serves.
type Route struct{ Method, Path string }

// Routes lists the endpoints the edge serves, as registered (HEAD and
// Fiber's internal ones left out): the docs and the authorization rules
// are checked against it.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.app.GetRoutes(true) {
		if r.Method == fiber.MethodHead || r.Method == fiber.MethodConnect || r.Method == fiber.MethodTrace || r.Method == fiber.MethodOptions {
			continue
		}
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}

// Test serves one request in memory, without a listener, as Fiber's
// App.Test does.
func (s *Server) Test(req *http.Request, msTimeout ...int) (*http.Response, error) {
	return s.app.Test(req, msTimeout...)
}

// Handler is the edge as fasthttp's handler, to serve in memory
// (benchmarks) or on a listener of one's own.
func (s *Server) Handler() fasthttp.RequestHandler { return s.app.Handler() }
