package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"adaptbot/agent"
	"adaptbot/benchmarks"
	mcpclient "adaptbot/mcp/client"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// Server is AdaptBot's HTTP edge. Fiber stays inside package main.
type Server struct {
	cfg    Config
	agent  *agent.Agent
	reg    *registry.Registry
	box    toolbox.Box
	runner sandbox.Runner
	bench  *benchmarks.Logger
	stats  *benchmarks.Store
	build  builder
	mcp    fiber.Handler
	hub    *mcpclient.Hub
	link   *clusterLink
	log    *slog.Logger
	app    *fiber.App
	ws     *Workspace
	limits *limits
}

// Deps are the server's dependencies; build and mcp may be nil.
type Deps struct {
	Config Config
	Agent  *agent.Agent
	Reg    *registry.Registry
	Box    toolbox.Box
	Runner sandbox.Runner
	Bench  *benchmarks.Logger
	Stats  *benchmarks.Store // the aggregates behind /dashboard; nil: none yet
	Build  builder
	MCP    fiber.Handler
	Hub    *mcpclient.Hub
	Log    *slog.Logger
	// Workspace is the trace store and the model check; either may be nil.
	Workspace *Workspace
	// Cluster is the link to NATS; nil on files alone.
	Cluster *clusterLink
}

// NewServer wires the HTTP server.
func NewServer(d Deps) *Server {
	s := &Server{cfg: d.Config.edgeDefaults(), agent: d.Agent, reg: d.Reg, box: d.Box, runner: d.Runner, bench: d.Bench, stats: d.Stats, build: d.Build, mcp: d.MCP, hub: d.Hub, link: d.Cluster, log: d.Log, ws: d.Workspace}
	s.limits = newLimits(s.cfg.Edge)
	s.app = fiber.New(fiber.Config{
		AppName:               "AdaptBot",
		BodyLimit:             s.cfg.Edge.bodyLimit(),
		Immutable:             true, // handlers may keep strings past the request
		DisableStartupMessage: true,
		ErrorHandler:          errorHandler(d.Log),
		ReadTimeout:           30 * time.Second,
		IdleTimeout:           2 * time.Minute,
	})
	s.app.Use(recover.New(), securityHeaders(), s.sameSite())
	s.routes()
	return s
}

// Shutdown stops accepting requests and waits for those under way.
func (s *Server) Shutdown(ctx context.Context) error { return s.app.ShutdownWithContext(ctx) }

// logRow appends a benchmark row; a failure to log is logged, never fatal.
func (s *Server) logRow(r benchmarks.Row) {
	if s.bench == nil {
		return
	}
	if err := s.bench.Log(r); err != nil {
		s.log.Error("benchmarks: row not written", "err", err, "request_id", r.RequestID)
	}
}

func tri(b *bool) benchmarks.Tri {
	if b == nil {
		return benchmarks.NA
	}
	return benchmarks.TriOf(*b)
}
