package web

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/identity"
)

// Route is one endpoint of the edge, as the route table says it: its
// method and path, what the edge checks before anything is decoded, and
// the operation whose row a refusal before that operation began writes.
// The table registers Fiber's routes, names the refusals' rows
// (refusals.go), and is what the tests and docs/api.md are checked against.
type Route struct {
	// Method is an HTTP method, or "*" for every method (/mcp).
	Method string
	// Path is Fiber's: ":name" is a tool's, a user's or a secret's name,
	// ":id" a request's, a case's or an approval's ID, "*" the rest of the
	// path.
	Path string
	// Need is the action the edge checks before anything is decoded; ""
	// when the route's operation checks alone (reads, chats), the route is
	// public, or it checks its own token (/metrics).
	Need identity.Action
	// Op, when set, says the route's requests are operations with a row:
	// one the edge refuses before the operation begins (a body too large,
	// a rate, a role) still writes it, naming this.
	Op *Operation
	// Model says the route starts model work: the rate limit and an
	// in-flight slot apply.
	Model bool
	// Leave says the route's work ends when the client goes away (a
	// stream watches its own connection instead).
	Leave bool

	// serve makes the route's handler; mounted, when set, says whether a
	// server serves the route at all.
	serve   func(*Server) fiber.Handler
	mounted func(*Server) bool
}

// Operation is what a refused request's row says of the operation it
// asked for.
type Operation struct {
	Intent   string
	Category string
	// Tool says the route's :name is the tool the operation is about; a
	// run's category is the tool's name.
	Tool bool
	// Method, when set, is the one method of a "*" route whose requests
	// are this operation (a message POSTed to /mcp).
	Method string
}

// table is every endpoint the edge serves, in the order Fiber registers
// them. A new route is a row here; a read of the service that answers what
// the service returns needs no handler of its own (read, named).
var table = []Route{
	// Pages.
	{Method: fiber.MethodGet, Path: "/", serve: (*Server).handleIndex},
	{Method: fiber.MethodGet, Path: "/tools", serve: (*Server).handleToolsPage},
	{Method: fiber.MethodGet, Path: "/tools/:name", serve: (*Server).handleToolPage},
	{Method: fiber.MethodGet, Path: "/dashboard", Need: identity.ReadAll, serve: (*Server).handleDashboard},
	{Method: fiber.MethodGet, Path: "/secrets", Need: identity.Chat, serve: (*Server).handleSecretsPage},
	{Method: fiber.MethodGet, Path: "/requests/:id", serve: (*Server).handleRequestPage},
	{Method: fiber.MethodGet, Path: "/static/*", serve: (*Server).handleStatic},
	{Method: fiber.MethodGet, Path: "/healthz", serve: (*Server).handleHealth},
	{Method: fiber.MethodGet, Path: "/metrics", serve: (*Server).handleMetrics, mounted: func(s *Server) bool { return s.metrics != nil }},
	{Method: fiber.MethodPost, Path: "/chat", Model: true, Leave: true, Op: &Operation{Intent: adaptbot.IntentChat}, serve: (*Server).handleChat},

	// Signing in (auth.go).
	{Method: fiber.MethodGet, Path: "/login", serve: func(s *Server) fiber.Handler { return s.auth.handleLoginPage() }},
	{Method: fiber.MethodGet, Path: "/login/oidc", serve: func(s *Server) fiber.Handler { return s.auth.handleLoginStart() }},
	{Method: fiber.MethodGet, Path: "/login/callback", serve: func(s *Server) fiber.Handler { return s.auth.handleLoginCallback() }},
	{Method: fiber.MethodPost, Path: "/login/key", serve: func(s *Server) fiber.Handler { return s.auth.handleKeyLogin() }},
	{Method: fiber.MethodGet, Path: "/logout", serve: func(s *Server) fiber.Handler { return s.auth.handleLogoutPage() }},
	{Method: fiber.MethodPost, Path: "/logout", serve: func(s *Server) fiber.Handler { return s.auth.handleLogout() }},
	{Method: fiber.MethodGet, Path: "/api/me", serve: func(s *Server) fiber.Handler { return s.auth.handleMe() }},

	// The users (users.go): admins only, checked by the service.
	{Method: fiber.MethodGet, Path: "/api/users", serve: read(Service.Users)},
	{Method: fiber.MethodPost, Path: "/api/users", serve: (*Server).handleUserAdd},
	{Method: fiber.MethodPatch, Path: "/api/users/:name", serve: (*Server).handleUserRole},
	{Method: fiber.MethodDelete, Path: "/api/users/:name", serve: (*Server).handleUserRemove},
	{Method: fiber.MethodPost, Path: "/api/users/:name/rotate", serve: (*Server).handleUserRotate},
	{Method: fiber.MethodGet, Path: "/api/users/:name/sessions", serve: named(Service.Sessions)},
	{Method: fiber.MethodDelete, Path: "/api/users/:name/sessions", serve: (*Server).handleUserSessionsEnd},
	{Method: fiber.MethodDelete, Path: "/api/users/:name/sessions/:id", serve: (*Server).handleUserSessionsEnd},

	// Tools: reading, running, building and changing them (build.go).
	{Method: fiber.MethodGet, Path: "/api/tools", serve: read(Service.Tools)},
	{Method: fiber.MethodGet, Path: "/api/tools/:name", serve: named(Service.Tool)},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/run", Need: identity.RunTool, Leave: true,
		Op: &Operation{Intent: adaptbot.IntentRun, Tool: true}, serve: (*Server).handleToolRun},
	{Method: fiber.MethodGet, Path: "/api/tools/:name/versions", serve: named(Service.Versions)},
	{Method: fiber.MethodPost, Path: "/api/tools/build", Need: identity.Build, Model: true,
		Op: &Operation{Intent: adaptbot.IntentBuild}, serve: (*Server).handleBuild},
	{Method: fiber.MethodDelete, Path: "/api/tools/:name", Need: identity.Delete,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildDelete, Tool: true}, serve: (*Server).handleToolDelete},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/rollback", Need: identity.Delete,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildRollback, Tool: true}, serve: namedBody(Service.Rollback)},
	{Method: fiber.MethodGet, Path: "/api/tools/:name/diff", serve: (*Server).handleToolDiff},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/test", Need: identity.Build, Leave: true,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildTest, Tool: true}, serve: named(Service.Test)},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/approve", Need: identity.Delete,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildApprove, Tool: true}, serve: named(Service.Approve)},
	{Method: fiber.MethodPost, Path: "/api/tools/import", Need: identity.Build, Model: true,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildImport}, serve: (*Server).handleToolImport},
	{Method: fiber.MethodPost, Path: "/api/tools/plan", Need: identity.Build, Model: true, Leave: true,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildPlan}, serve: body(Service.Plan)},

	// Learning from use (learning.go): failure cases, repairs, feedback.
	{Method: fiber.MethodGet, Path: "/api/failures", serve: read(Service.FailureSummary)},
	{Method: fiber.MethodGet, Path: "/api/tools/:name/failures", serve: named(Service.Failures)},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/failures/:id/confirm", Need: identity.Build, serve: triage(Service.ConfirmCase)},
	{Method: fiber.MethodDelete, Path: "/api/tools/:name/failures/:id", Need: identity.Build, serve: triage(Service.DismissCase)},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/repair", Need: identity.Build, Model: true, Leave: true,
		Op: &Operation{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildModify, Tool: true}, serve: (*Server).handleToolRepair},
	{Method: fiber.MethodPost, Path: "/api/requests/:id/feedback", Op: &Operation{Intent: adaptbot.IntentFeedback}, serve: (*Server).handleFeedback},
	{Method: fiber.MethodGet, Path: "/api/skills", serve: read(Service.Skills)},

	// Tools that act (acting.go): a person's secrets and answers to
	// approvals, checked by the service; an admin's trust of a tool's
	// requests to a host.
	{Method: fiber.MethodGet, Path: "/api/secrets", serve: read(Service.Secrets)},
	{Method: fiber.MethodPut, Path: "/api/secrets/:name", Op: &Operation{Intent: adaptbot.IntentManage, Category: "secrets_set"}, serve: (*Server).handleSecretSet},
	{Method: fiber.MethodDelete, Path: "/api/secrets/:name", Op: &Operation{Intent: adaptbot.IntentManage, Category: "secrets_delete"}, serve: (*Server).handleSecretDelete},
	{Method: fiber.MethodGet, Path: "/api/approvals", serve: read(Service.Approvals)},
	{Method: fiber.MethodPost, Path: "/api/approvals/:id", Op: &Operation{Intent: adaptbot.IntentApprove, Category: "answer"}, serve: (*Server).handleApprovalAnswer},
	{Method: fiber.MethodPost, Path: "/api/tools/:name/trust", Need: identity.TrustTool,
		Op: &Operation{Intent: adaptbot.IntentManage, Category: "tool_trust", Tool: true}, serve: namedBody(Service.TrustTool)},
	{Method: fiber.MethodDelete, Path: "/api/tools/:name/trust", Need: identity.TrustTool,
		Op: &Operation{Intent: adaptbot.IntentManage, Category: "tool_untrust", Tool: true}, serve: (*Server).handleUntrust},

	// Analytics and traces.
	{Method: fiber.MethodGet, Path: "/api/benchmarks", Need: identity.ReadAll, serve: (*Server).handleBenchmarks},
	{Method: fiber.MethodGet, Path: "/api/requests", serve: (*Server).handleRequests},
	{Method: fiber.MethodGet, Path: "/api/requests/:id", serve: param("id", Service.Request)},

	// The OpenAI-compatible door (openai.go): a chat, and the models.
	{Method: fiber.MethodPost, Path: "/v1/chat/completions", Model: true, Leave: true, Op: &Operation{Intent: adaptbot.IntentChat}, serve: (*Server).handleCompletions},
	{Method: fiber.MethodGet, Path: "/v1/models", Need: identity.Chat, serve: (*Server).handleModels},

	// MCP's streamable HTTP transport: listing is a read; each tools/call
	// is a run, checked by the service as a direct run is. A message to
	// /mcp refused before it is read (too large) is put down as a run, its
	// tool unknown: listings are small.
	{Method: "*", Path: "/mcp", Need: identity.ReadTools, Op: &Operation{Intent: adaptbot.IntentRun, Method: fiber.MethodPost},
		serve: func(s *Server) fiber.Handler { return s.mcp }, mounted: func(s *Server) bool { return s.mcp != nil }},
}

// Routes returns the route table: every endpoint the edge can serve, in
// the order it registers them (/metrics and /mcp where they are
// configured).
func Routes() []Route { return slices.Clone(table) }

// routes registers the table with Fiber: each route's own checks, then its
// handler.
func (s *Server) routes() {
	for _, r := range table {
		if r.mounted != nil && !r.mounted(s) {
			continue
		}
		var chain []fiber.Handler
		if r.Need != "" {
			chain = append(chain, s.need(r.Need))
		}
		if r.Model {
			chain = append(chain, s.limits.rateLimit(), s.limits.admit())
		}
		if r.Leave {
			chain = append(chain, s.cancelOnLeave())
		}
		chain = append(chain, r.serve(s))
		if r.Method == "*" {
			s.app.All(r.Path, chain...)
		} else {
			s.app.Add(r.Method, r.Path, chain...)
		}
	}
}

// routeOf returns the route of a request of method to path, and its
// parameters, when the table has one: the most literal of those that
// match.
func routeOf(method, path string) (Route, map[string]string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var best Route
	var params map[string]string
	literals := -1
	for _, r := range table {
		if r.Method != method && r.Method != "*" {
			continue
		}
		p, n, ok := match(strings.Split(strings.Trim(r.Path, "/"), "/"), parts)
		if ok && n > literals {
			best, params, literals = r, p, n
		}
	}
	return best, params, literals >= 0
}

// match matches a path's parts against a route's pattern, returning its
// parameters (unescaped) and how many of the pattern's parts are literal.
func match(pattern, parts []string) (map[string]string, int, bool) {
	params := map[string]string{}
	literals := 0
	for i, p := range pattern {
		switch {
		case p == "*":
			return params, literals, true
		case i >= len(parts):
			return nil, 0, false
		case strings.HasPrefix(p, ":"):
			v := parts[i]
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
			params[p[1:]] = v
		case p == parts[i]:
			literals++
		default:
			return nil, 0, false
		}
	}
	return params, literals, len(pattern) == len(parts)
}

// The handlers of the service's reads and simple changes: each decodes
// what the route gives (its parameters, its body), calls one operation and
// answers what the operation returns.

// read answers op's result.
func read[T any](op func(Service, context.Context) (T, error)) func(*Server) fiber.Handler {
	return func(s *Server) fiber.Handler {
		return func(c *fiber.Ctx) error { return reply(c)(op(s.svc, c.UserContext())) }
	}
}

// named answers op's result for the route's :name.
func named[T any](op func(Service, context.Context, string) (T, error)) func(*Server) fiber.Handler {
	return param("name", op)
}

// param answers op's result for the route's parameter key.
func param[T any](key string, op func(Service, context.Context, string) (T, error)) func(*Server) fiber.Handler {
	return func(s *Server) fiber.Handler {
		return func(c *fiber.Ctx) error { return reply(c)(op(s.svc, c.UserContext(), c.Params(key))) }
	}
}

// body answers op's result for the request's body, decoded strictly.
func body[B, T any](op func(Service, context.Context, B) (T, error)) func(*Server) fiber.Handler {
	return func(s *Server) fiber.Handler {
		return func(c *fiber.Ctx) error {
			var b B
			if err := decodeJSON(c.Body(), &b, true); err != nil {
				return err
			}
			return reply(c)(op(s.svc, c.UserContext(), b))
		}
	}
}

// namedBody answers op's result for the route's :name and the request's
// body, decoded strictly.
func namedBody[B, T any](op func(Service, context.Context, string, B) (T, error)) func(*Server) fiber.Handler {
	return func(s *Server) fiber.Handler {
		return func(c *fiber.Ctx) error {
			var b B
			if err := decodeJSON(c.Body(), &b, true); err != nil {
				return err
			}
			return reply(c)(op(s.svc, c.UserContext(), c.Params("name"), b))
		}
	}
}

// triage answers op's result for the route's :name and :id.
func triage[T any](op func(Service, context.Context, string, string) (T, error)) func(*Server) fiber.Handler {
	return func(s *Server) fiber.Handler {
		return func(c *fiber.Ctx) error {
			return reply(c)(op(s.svc, c.UserContext(), c.Params("name"), c.Params("id")))
		}
	}
}

// reply answers an operation's result as JSON, or its error:
// reply(c)(s.svc.Tool(ctx, name)).
func reply(c *fiber.Ctx) func(any, error) error {
	return func(v any, err error) error {
		if err != nil {
			return err
		}
		return c.JSON(v)
	}
}
