package web

import (
	"github.com/gofiber/fiber/v2"

	"adaptbot/identity"
)

// routes lists every endpoint in one place. A route that changes or runs
// tools names the action it needs (need), which the service's operation
// checks again; reads and chats are checked by the operation alone.
func (s *Server) routes() {
	// Pages.
	s.app.Get("/", s.handleIndex())
	s.app.Get("/tools", s.handleToolsPage())
	s.app.Get("/tools/:name", s.handleToolPage())
	s.app.Get("/dashboard", s.need(identity.ReadAll), s.handleDashboard())
	s.app.Get("/requests/:id", s.handleRequestPage())
	s.app.Get("/static/*", s.handleStatic())
	s.app.Get("/healthz", s.handleHealth())
	if s.metrics != nil {
		s.app.Get("/metrics", handleMetrics(s.cfg, s.metrics))
	}
	s.app.Post("/chat", s.limits.rateLimit(), s.limits.admit(), s.cancelOnLeave(), s.handleChat())
	s.auth.routes(s.app)

	// The users API (users.go): admin only, checked by the service.
	s.app.Get("/api/users", s.handleUserList())
	s.app.Post("/api/users", s.handleUserAdd())
	s.app.Patch("/api/users/:name", s.handleUserRole())
	s.app.Delete("/api/users/:name", s.handleUserRemove())
	s.app.Post("/api/users/:name/rotate", s.handleUserRotate())
	s.app.Get("/api/users/:name/sessions", s.handleUserSessions())
	s.app.Delete("/api/users/:name/sessions", s.handleUserSessionsEnd())
	s.app.Delete("/api/users/:name/sessions/:id", s.handleUserSessionsEnd())

	s.app.Get("/api/tools", s.handleToolList())
	s.app.Get("/api/tools/:name", s.handleToolGet())
	s.app.Post("/api/tools/:name/run", s.need(identity.RunTool), s.cancelOnLeave(), s.handleToolRun())
	s.app.Get("/api/tools/:name/versions", s.handleToolVersions())
	s.app.Post("/api/tools/build", s.need(identity.Build), s.limits.rateLimit(), s.limits.admit(), s.handleBuild())
	s.app.Delete("/api/tools/:name", s.need(identity.Delete), s.handleToolDelete())
	s.app.Post("/api/tools/:name/rollback", s.need(identity.Delete), s.handleToolRollback())
	s.app.Get("/api/tools/:name/diff", s.handleToolDiff())
	s.app.Post("/api/tools/:name/test", s.need(identity.Build), s.cancelOnLeave(), s.handleToolTest())
	s.app.Post("/api/tools/:name/approve", s.need(identity.Delete), s.handleToolApprove())
	s.app.Post("/api/tools/import", s.need(identity.Build), s.limits.rateLimit(), s.limits.admit(), s.handleToolImport())
	s.app.Post("/api/tools/plan", s.need(identity.Build), s.limits.rateLimit(), s.limits.admit(), s.cancelOnLeave(), s.handleBuildPlan())

	// Learning from use (learning.go): failure cases, repairs, feedback.
	s.app.Get("/api/failures", s.handleFailureSummary())
	s.app.Get("/api/tools/:name/failures", s.handleToolFailures())
	s.app.Post("/api/tools/:name/failures/:id/confirm", s.need(identity.Build), s.handleCaseConfirm())
	s.app.Delete("/api/tools/:name/failures/:id", s.need(identity.Build), s.handleCaseDismiss())
	s.app.Post("/api/tools/:name/repair", s.need(identity.Build), s.limits.rateLimit(), s.limits.admit(), s.cancelOnLeave(), s.handleToolRepair())
	s.app.Post("/api/requests/:id/feedback", s.handleFeedback())
	s.app.Get("/api/skills", s.handleSkills())

	// Analytics and traces.
	s.app.Get("/api/benchmarks", s.need(identity.ReadAll), s.handleBenchmarks())
	s.app.Get("/api/requests", s.handleRequests())
	s.app.Get("/api/requests/:id", s.handleRequest())

	// The OpenAI-compatible door (openai.go): a chat, and the models.
	s.app.Post("/v1/chat/completions", s.openAIDoor(), s.limits.rateLimit(), s.limits.admit(), s.cancelOnLeave(), s.handleCompletions())
	s.app.Get("/v1/models", s.openAIDoor(), s.need(identity.Chat), s.handleModels())

	if s.mcp != nil {
		// Listing is a read; each tools/call is a run, checked by the
		// service (builder role), as a direct run is.
		s.app.All("/mcp", s.need(identity.ReadTools), s.mcpDoor(), s.mcp)
	}
}

// routes adds the sign-in pages and /api/me.
func (e *Auth) routes(r fiber.Router) {
	r.Get("/login", e.handleLoginPage())
	r.Get("/login/oidc", e.handleLoginStart())
	r.Get("/login/callback", e.handleLoginCallback())
	r.Post("/login/key", e.handleKeyLogin())
	r.Get("/logout", e.handleLogoutPage())
	r.Post("/logout", e.handleLogout())
	r.Get("/api/me", e.handleMe())
}
