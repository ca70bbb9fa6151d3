package main

// routes lists every endpoint in one place.
func (s *Server) routes() {
	// Pages.
	s.app.Get("/", s.handleIndex())
	s.app.Get("/tools", s.handleToolsPage())
	s.app.Get("/tools/:name", s.handleToolPage())
	s.app.Get("/dashboard", s.handleDashboard())
	s.app.Get("/static/*", s.handleStatic())
	s.app.Get("/healthz", s.handleHealth())
	s.app.Post("/chat", s.limits.rateLimit(), s.limits.admit(), s.handleChat())

	s.app.Get("/api/tools", s.handleToolList())
	s.app.Get("/api/tools/:name", s.handleToolGet())
	s.app.Post("/api/tools/:name/run", s.requireAdmin(), s.cancelOnLeave(), s.handleToolRun())
	s.app.Get("/api/tools/:name/versions", s.handleToolVersions())
	s.app.Post("/api/tools/build", s.requireAdmin(), s.limits.rateLimit(), s.limits.admit(), s.handleBuild())
	s.app.Delete("/api/tools/:name", s.requireAdmin(), s.handleToolDelete())
	s.app.Post("/api/tools/:name/rollback", s.requireAdmin(), s.handleToolRollback())
	s.app.Get("/api/tools/:name/diff", s.handleToolDiff())
	s.app.Post("/api/tools/:name/test", s.requireAdmin(), s.handleToolTest())
	s.app.Post("/api/tools/:name/approve", s.requireAdmin(), s.handleToolApprove())
	s.app.Post("/api/tools/plan", s.requireAdmin(), s.limits.rateLimit(), s.limits.admit(), s.cancelOnLeave(), s.handleBuildPlan())

	// Analytics and traces.
	s.app.Get("/api/benchmarks", s.handleBenchmarks())
	s.app.Get("/api/requests", s.handleRequests())
	s.app.Get("/api/requests/:id", s.handleRequest())

	if s.mcp != nil {
		s.app.All("/mcp", s.requireAdmin(), s.mcp)
	}
}
