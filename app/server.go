package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"adaptbot/config"
	"adaptbot/service"
	"adaptbot/telemetry"
)

// Server is AdaptBot's HTTP edge: it decodes requests, calls the service
// and encodes its answers. Fiber stays inside package main.
type Server struct {
	cfg     config.Config
	svc     *service.Service
	mcp     fiber.Handler
	log     *slog.Logger
	app     *fiber.App
	ws      *Workspace
	auth    *authEdge
	metrics *telemetry.Metrics
	limits  *limits
}

// Deps are the server's dependencies: the service does the work, the edge
// decodes, checks who asks and encodes. MCP, Workspace and Metrics may be
// nil.
type Deps struct {
	Config  config.Config
	Service *service.Service
	MCP     fiber.Handler
	Log     *slog.Logger
	// Workspace is the trace store and the model check; either may be nil.
	Workspace *Workspace
	// Auth establishes who each request comes from (openAuth).
	Auth *authEdge
	// Metrics are served at /metrics; nil serves none.
	Metrics *telemetry.Metrics
}

// NewServer wires the HTTP server.
func NewServer(d Deps) *Server {
	s := &Server{cfg: d.Config, svc: d.Service, mcp: d.MCP, log: d.Log, ws: d.Workspace, auth: d.Auth, metrics: d.Metrics}
	s.cfg.Edge = s.cfg.Edge.WithDefaults() // a Config built by hand has no limits
	s.limits = newLimits(s.cfg.Edge, rateKey)
	s.app = fiber.New(fiber.Config{
		AppName:               "AdaptBot",
		BodyLimit:             s.cfg.Edge.BodyLimit(),
		Immutable:             true, // handlers may keep strings past the request
		DisableStartupMessage: true,
		ErrorHandler:          s.refusals(errorHandler(d.Log)),
		ReadTimeout:           30 * time.Second,
		IdleTimeout:           2 * time.Minute,
	})
	s.app.Use(recover.New(), securityHeaders(), s.sameSite(), s.auth.authenticate(), s.door())
	s.routes()
	return s
}

// Shutdown stops accepting requests and waits for those under way.
func (s *Server) Shutdown(ctx context.Context) error { return s.app.ShutdownWithContext(ctx) }
