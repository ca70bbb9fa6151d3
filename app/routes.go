package main

// routes lists every endpoint in one place.
func (s *Server) routes() {
	s.app.Get("/", s.handleIndex())
	s.app.Get("/dashboard", s.handleDashboard())
	s.app.Get("/healthz", s.handleHealth())
	s.app.Post("/chat", s.limits.rateLimit(), s.limits.admit(), s.handleChat())

	s.app.Get("/api/tools", s.handleToolList())
	s.app.Get("/api/tools/:name", s.handleToolGet())
	s.app.Post("/api/tools/:name/run", s.requireAdmin(), s.cancelOnLeave(), s.handleToolRun())
	s.app.Get("/api/tools/:name/versions", s.handleToolVersions())
	s.app.Post("/api/tools/build", s.requireAdmin(), s.limits.rateLimit(), s.limits.admit(), s.handleBuild())
	s.app.Delete("/api/tools/:name", s.requireAdmin(), s.handleToolDelete())
	s.app.Post("/api/tools/:name/rollback", s.requireAdmin(), s.handleToolRollback())

	s.app.Get("/api/benchmarks", s.handleBenchmarks())
	s.workspaceRoutes()

	if s.mcp != nil {
		s.app.All("/mcp", s.requireAdmin(), s.mcp)
	}
}
