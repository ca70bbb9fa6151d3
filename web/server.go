// Package web is AdaptBot's HTTP edge: the Fiber routes, handlers and
// pages, the sign-in adapters, the limits and the cross-site rules. It
// decodes a request, establishes who sent it, asks the Service (the root's
// operations, which *service.Service implements) and encodes the answer;
// it holds no registry, file or runner of its own. Of AdaptBot it imports
// the root, identity and auth, the telemetry it counts with, and its pages
// (templates): never an engine. Package main (app/) wires it, and gives it
// its settings (Options, Limits).
package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"adaptbot/telemetry"
)

// Server is AdaptBot's HTTP edge: it decodes requests, asks the Service
// and encodes its answers. Fiber stays inside package web.
type Server struct {
	opts    Options
	svc     Service
	mcp     fiber.Handler
	log     *slog.Logger
	app     *fiber.App
	auth    *Auth
	metrics *telemetry.Metrics
	limits  *limits
}

// Options are the edge's settings besides its three parts (package main
// takes them from the configuration).
type Options struct {
	// Addr is where the server listens (ADAPTBOT_ADDR): its host is one the
	// Host rule accepts.
	Addr string
	// Loopback says the server listens on loopback only: /metrics is open
	// then, as /healthz is.
	Loopback bool
	// Limits are the edge's limits and cross-site rules.
	Limits Limits
	// Review says new and changed tools wait for approval
	// (ADAPTBOT_REVIEW): the tools pages say so.
	Review bool
	// Benchmarks is the benchmarks CSV, which the dashboard names.
	Benchmarks string
	// QuantileError is the largest relative error of the dashboard's
	// latency quantiles, which it states (benchmarks.MaxQuantileError).
	QuantileError float64
	// MetricsToken lets a scraper read /metrics beyond loopback
	// (ADAPTBOT_METRICS_TOKEN).
	MetricsToken string
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
	s := &Server{opts: o, svc: svc, log: o.Log, auth: auth, metrics: metrics}
	if o.MCP != nil {
		s.mcp = streamHandler(o.Context, o.MCP)
	}
	s.opts.Limits = o.Limits.WithDefaults() // Options built by hand have no limits
	s.limits = newLimits(s.opts.Limits, rateKey)
	s.app = fiber.New(fiber.Config{
		AppName:               "AdaptBot",
		BodyLimit:             s.opts.Limits.BodyLimit(),
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
