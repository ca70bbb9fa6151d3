package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"adaptbot/config"
	"adaptbot/identity"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/web"
)

// The authorization table: every route the server registers, and every MCP
// method that lists, changes or runs tools, with the action it takes. A
// route the server registers without a rule here fails
// TestEveryRouteHasAnAuthorizationRule, so a new route cannot be added
// without deciding who may use it. A rule is allowed for a role iff the
// role may take its action (identity.Need: the one permission rule).

// public marks the routes anyone may reach, signed in or not: the sign-in
// pages, the pages' files, /healthz. (/metrics checks its own token; its
// rule is ReadAll.)
const public identity.Action = "public"

// routeRule is who may use one route: the action it takes, and what a
// trial sends (a body).
type routeRule struct {
	action identity.Action
	body   string
}

// routeRules are keyed by "METHOD /path" as Fiber lists them; "* /path"
// covers every method of a route registered with All. HEAD follows GET.
var routeRules = map[string]routeRule{
	"GET /":                                      {identity.Chat, ""},
	"GET /tools":                                 {identity.ReadTools, ""},
	"GET /tools/:name":                           {identity.ReadTools, ""},
	"GET /dashboard":                             {identity.ReadAll, ""},
	"GET /requests/:id":                          {identity.ReadOwn, ""},
	"GET /static/*":                              {public, ""},
	"GET /healthz":                               {public, ""},
	"GET /metrics":                               {identity.ReadAll, ""},
	"POST /chat":                                 {identity.Chat, `{"message": "hello"}`},
	"GET /login":                                 {public, ""},
	"GET /login/oidc":                            {public, ""},
	"GET /login/callback":                        {public, ""},
	"POST /login/key":                            {public, `{"key": ""}`},
	"GET /logout":                                {public, ""},
	"POST /logout":                               {public, ""},
	"GET /api/me":                                {identity.ReadOwn, ""},
	"GET /api/users":                             {identity.Manage, ""},
	"POST /api/users":                            {identity.Manage, `{"name": "someone", "role": "nope"}`},
	"PATCH /api/users/:name":                     {identity.Manage, `{"role": "nope"}`},
	"DELETE /api/users/:name":                    {identity.Manage, ""},
	"POST /api/users/:name/rotate":               {identity.Manage, ""},
	"GET /api/users/:name/sessions":              {identity.Manage, ""},
	"DELETE /api/users/:name/sessions":           {identity.Manage, ""},
	"DELETE /api/users/:name/sessions/:id":       {identity.Manage, ""},
	"GET /api/tools":                             {identity.ReadTools, ""},
	"GET /api/tools/:name":                       {identity.ReadTools, ""},
	"POST /api/tools/:name/run":                  {identity.RunTool, `{"expression": "1+1"}`},
	"GET /api/tools/:name/versions":              {identity.ReadTools, ""},
	"POST /api/tools/build":                      {identity.Build, `{"request": "make a tool that adds one"}`},
	"DELETE /api/tools/:name":                    {identity.Delete, ""},
	"POST /api/tools/:name/rollback":             {identity.Delete, `{"version": 1}`},
	"GET /api/tools/:name/diff":                  {identity.ReadTools, ""},
	"POST /api/tools/:name/test":                 {identity.Build, ""},
	"POST /api/tools/:name/approve":              {identity.Delete, ""},
	"POST /api/tools/import":                     {identity.Build, `{"bundle": "AAAA"}`},
	"POST /api/tools/plan":                       {identity.Build, `{"request": "make a tool that adds one"}`},
	"GET /api/failures":                          {identity.ReadTools, ""},
	"GET /api/skills":                            {identity.ReadTools, ""},
	"GET /v1/models":                             {identity.Chat, ""},
	"POST /v1/chat/completions":                  {identity.Chat, `{"model": "adaptbot", "messages": [{"role": "user", "content": "hello"}]}`},
	"GET /api/tools/:name/failures":              {identity.ReadTools, ""},
	"POST /api/tools/:name/failures/:id/confirm": {identity.Build, ""},
	"DELETE /api/tools/:name/failures/:id":       {identity.Build, ""},
	"POST /api/tools/:name/repair":               {identity.Build, `{}`},
	"POST /api/requests/:id/feedback":            {identity.ReadOwn, `{"score": 1}`},
	"GET /api/benchmarks":                        {identity.ReadAll, ""},
	"GET /api/requests":                          {identity.ReadOwn, ""},
	"GET /api/requests/:id":                      {identity.ReadOwn, ""},
	"* /mcp":                                     {identity.ReadTools, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
}

// mcpRules are the MCP methods a client sends on /mcp, with the action each
// takes.
var mcpRules = []struct {
	method string
	action identity.Action
	params string
}{
	{"initialize", identity.ReadTools, `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"authz","version":"1"}}`},
	{"tools/list", identity.ReadTools, `{}`},
	{"tools/call", identity.RunTool, `{"name":"calculator","arguments":{"expression":"1+1"}}`},
}

// rule finds the rule of a route as Fiber lists it.
func rule(method, path string) (routeRule, bool) {
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	if r, ok := routeRules[method+" "+path]; ok {
		return r, true
	}
	r, ok := routeRules["* "+path]
	return r, ok
}

// registeredRoutes are the routes a fully wired server registers, as
// Fiber lists them: every method and path.
func registeredRoutes(t *testing.T) []web.Route {
	t.Helper()
	cfg := config.Config{Addr: "0.0.0.0:3000", AdminToken: "s3cret-admin-token"}
	s := web.NewServer(service.New(service.Deps{}), testAuth(t, cfg), telemetry.NewMetrics(),
		web.Options{Config: cfg, MCP: http.NotFoundHandler()})
	routes := s.Routes()
	if len(routes) < len(routeRules) {
		t.Fatalf("the server registers %d routes, fewer than the %d rules", len(routes), len(routeRules))
	}
	return routes
}

// TestEveryRouteHasAnAuthorizationRule: a route without a rule, or a rule
// for a route that is gone, fails.
func TestEveryRouteHasAnAuthorizationRule(t *testing.T) {
	used := map[string]bool{}
	for _, r := range registeredRoutes(t) {
		if _, ok := rule(r.Method, r.Path); !ok {
			t.Errorf("%s %s has no rule in routeRules (app/authz_test.go): decide who may use it", r.Method, r.Path)
		}
		method := r.Method
		if method == fiber.MethodHead {
			method = fiber.MethodGet
		}
		used[method+" "+r.Path] = true
		used["* "+r.Path] = true
	}
	for key := range routeRules {
		if !used[key] {
			t.Errorf("routeRules has %q, which the server does not register", key)
		}
	}
}

// trialPath fills a route's parameters with things that do not exist, so
// that a request let through changes nothing (and answers 404, or 400):
// the calculator only for reads.
func trialPath(path string, a identity.Action) string {
	name := "no_such_tool"
	if a == identity.ReadTools || a == public {
		name = "calculator"
	}
	path = strings.ReplaceAll(path, ":name", name)
	path = strings.ReplaceAll(path, ":id", "0123456789abcdef")
	return strings.ReplaceAll(path, "*", "app.css")
}

// TestAuthorizationOnEveryRoute runs a server beyond loopback with an admin
// token and a person of each role, and tries every route and every MCP
// method: without credentials and with a wrong key (refused, 401, but for
// the public routes), from another site's page with the admin token
// (refused, 403, everywhere), and with each role's key (refused, 403,
// where the role may not take the route's action; let through where it
// may). Nothing of the tools changes.
func TestAuthorizationOnEveryRoute(t *testing.T) {
	// Every route is tried with a wrong key from one address: the
	// throttle (TestFailedCredentialsAreThrottled) must not answer for
	// the routes, so its wait is next to nothing here.
	in := start(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": "s3cret-admin-token", "ADAPTBOT_AUTH_BACKOFF_MAX": "1ns"})
	// Reach it by an address, as a client does (the MCP handler refuses a
	// Host of "[::]" arriving over loopback).
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	keys := map[identity.Role]string{}
	for _, role := range identity.Roles {
		body := `{"name": "p_` + string(role) + `", "role": "` + string(role) + `"}`
		code, _, raw := in.send(t, "POST", "/api/users", body, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"})
		var r map[string]any
		json.Unmarshal(raw, &r)
		key, _ := r["key"].(string)
		if code/100 != 2 || key == "" {
			t.Fatalf("add a %s: %d %s", role, code, raw)
		}
		keys[role] = key
	}
	toolsBefore := tree(t, filepath.Join(in.dir, "tools"))

	type trial struct {
		name    string
		headers map[string]string
		role    identity.Role // "" for nobody
		origin  bool          // sent from another site's page
	}
	trials := []trial{
		{name: "without credentials", headers: map[string]string{}},
		{name: "with a wrong key", headers: map[string]string{"Authorization": "Bearer adaptbot_wrong"}},
		{name: "from another site", headers: map[string]string{"Authorization": "Bearer s3cret-admin-token", "Origin": "http://evil.example"}, role: identity.Admin, origin: true},
	}
	for _, role := range identity.Roles {
		trials = append(trials, trial{name: "as a " + string(role), headers: map[string]string{"Authorization": "Bearer " + keys[role]}, role: role})
	}
	tried := 0
	for _, r := range registeredRoutes(t) {
		ru, ok := rule(r.Method, r.Path)
		if !ok || r.Method == fiber.MethodConnect {
			continue // no rule: the test above fails; CONNECT: Go's client cannot send it to a path
		}
		path := trialPath(r.Path, ru.action)
		for _, tr := range trials {
			headers := map[string]string{}
			for k, v := range tr.headers {
				headers[k] = v
			}
			body := ru.body
			if r.Method == fiber.MethodGet || r.Method == fiber.MethodHead || r.Method == fiber.MethodOptions || r.Method == fiber.MethodTrace {
				body = ""
			}
			if body != "" {
				headers["Content-Type"] = "application/json"
			}
			if r.Path == "/mcp" {
				headers["Accept"] = "application/json, text/event-stream"
			}
			code, _, raw := in.send(t, r.Method, path, body, headers)
			tried++
			var want int // 0: let through
			switch {
			case tr.origin:
				want = http.StatusForbidden
			case ru.action == public:
			case tr.role == "":
				want = http.StatusUnauthorized
			case !(identity.Identity{Role: tr.role}).Can(ru.action):
				want = http.StatusForbidden
			}
			refused := code == http.StatusUnauthorized || code == http.StatusForbidden
			switch {
			case want == 0 && refused:
				t.Errorf("%s %s %s: %d %s; want it let through", tr.name, r.Method, path, code, raw)
			case want != 0 && code != want:
				t.Errorf("%s %s %s: %d %s; want %d", tr.name, r.Method, path, code, raw, want)
			}
		}
	}
	if tried < len(trials)*len(routeRules) {
		t.Errorf("only %d trials for %d rules", tried, len(routeRules))
	}

	// MCP, method by method, on the wire as a client sends them: nobody
	// gets in; every role lists; only a builder or an admin runs a tool.
	for _, m := range mcpRules {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": m.method, "params": json.RawMessage(m.params)})
		for _, tr := range trials[:3] {
			headers := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
			for k, v := range tr.headers {
				headers[k] = v
			}
			code, _, raw := in.send(t, "POST", "/mcp", string(body), headers)
			if (code != http.StatusUnauthorized && code != http.StatusForbidden) || strings.Contains(string(raw), "1+1 = 2") {
				t.Errorf("MCP %s %s: %d %s; want 401 or 403", m.method, tr.name, code, raw)
			}
		}
	}
	for _, role := range identity.Roles {
		session := mcpSession(t, in, "Bearer "+keys[role])
		out := session.call(t, "tools/call", `{"name":"calculator","arguments":{"expression":"1+1"}}`)
		may := (identity.Identity{Role: role}).Can(identity.RunTool)
		if ran := strings.Contains(out, "1+1 = 2"); ran != may || (!may && !strings.Contains(out, "builder role")) {
			t.Errorf("tools/call as a %s = %s", role, out)
		}
	}
	if after := tree(t, filepath.Join(in.dir, "tools")); !equalTrees(toolsBefore, after) {
		t.Error("the tools changed during the authorization trials")
	}
}

// mcpClient is a streamable-HTTP MCP session made by hand.
type mcpClient struct {
	in      *instance
	auth    string
	session string
	id      int
}

// mcpSession initializes a session on /mcp with auth.
func mcpSession(t *testing.T, in *instance, auth string) *mcpClient {
	t.Helper()
	c := &mcpClient{in: in, auth: auth}
	out := c.call(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"authz","version":"1"}}`)
	if c.session == "" || !strings.Contains(out, "protocolVersion") {
		t.Fatalf("initialize: session %q, %s", c.session, out)
	}
	c.notify(t, "notifications/initialized")
	return c
}

func (c *mcpClient) headers() map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Authorization": c.auth}
	if c.session != "" {
		h["Mcp-Session-Id"] = c.session
	}
	return h
}

// call sends one request and returns the answer's text (an SSE frame or
// JSON).
func (c *mcpClient) call(t *testing.T, method, params string) string {
	t.Helper()
	c.id++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": json.RawMessage(params)})
	code, h, raw := c.in.send(t, "POST", "/mcp", string(body), c.headers())
	if code != http.StatusOK {
		t.Fatalf("MCP %s: %d %s", method, code, raw)
	}
	if s := h.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	return string(raw)
}

func (c *mcpClient) notify(t *testing.T, method string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if code, _, raw := c.in.send(t, "POST", "/mcp", string(body), c.headers()); code/100 != 2 {
		t.Fatalf("MCP %s: %d %s", method, code, raw)
	}
}
