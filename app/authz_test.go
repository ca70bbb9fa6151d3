package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"adaptbot/identity"
)

// The authorization table: every route the server registers, and every MCP
// method that lists, changes or runs tools, with the action it takes. A
// route the server registers without a rule here fails
// TestEveryRouteHasAnAuthorizationRule, so a new route cannot be added
// without deciding who may use it.
//
// The action is identity's: when roles come (user, builder, admin), a rule
// is allowed for a role iff role ≥ identity.Need(action), and the table
// stays as it is. Today there is one credential, the admin token, and
// tokenNeeded says which actions it guards.

// routeRule is who may use one route: the action it takes, and what a
// trial sends (the :name it asks for, a body).
type routeRule struct {
	action identity.Action
	body   string
}

// routeRules are keyed by "METHOD /path" as Fiber lists them; "* /path"
// covers every method of a route registered with All. HEAD follows GET.
var routeRules = map[string]routeRule{
	"GET /":                          {identity.Chat, ""},
	"GET /tools":                     {identity.ReadTools, ""},
	"GET /tools/:name":               {identity.ReadTools, ""},
	"GET /dashboard":                 {identity.ReadAll, ""},
	"GET /static/*":                  {identity.ReadTools, ""},
	"GET /healthz":                   {identity.ReadTools, ""},
	"POST /chat":                     {identity.Chat, `{"message": "hello"}`},
	"GET /api/tools":                 {identity.ReadTools, ""},
	"GET /api/tools/:name":           {identity.ReadTools, ""},
	"POST /api/tools/:name/run":      {identity.RunTool, `{"expression": "1+1"}`},
	"GET /api/tools/:name/versions":  {identity.ReadTools, ""},
	"POST /api/tools/build":          {identity.Build, `{"request": "make a tool that adds one"}`},
	"DELETE /api/tools/:name":        {identity.Delete, ""},
	"POST /api/tools/:name/rollback": {identity.Delete, `{"version": 1}`},
	"GET /api/tools/:name/diff":      {identity.ReadTools, ""},
	"POST /api/tools/:name/test":     {identity.Build, ""},
	"POST /api/tools/:name/approve":  {identity.Delete, ""},
	"POST /api/tools/plan":           {identity.Build, `{"request": "make a tool that adds one"}`},
	"GET /api/benchmarks":            {identity.ReadAll, ""},
	"GET /api/requests":              {identity.ReadAll, ""},
	"GET /api/requests/:id":          {identity.ReadOwn, ""},
	"* /mcp":                         {identity.RunTool, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
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

// tokenNeeded is today's rule: beyond loopback, the admin token guards
// every action that builds, changes, deletes or directly runs a tool;
// chat and reading are open. /mcp as a whole is guarded (its route's
// action is RunTool), whatever the MCP method.
func tokenNeeded(a identity.Action) bool {
	switch a {
	case identity.RunTool, identity.Build, identity.Delete:
		return true
	}
	return false
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
func registeredRoutes(t *testing.T) []fiber.Route {
	t.Helper()
	s := NewServer(Deps{Config: Config{Addr: "0.0.0.0:3000", AdminToken: "s3cret"},
		MCP: func(c *fiber.Ctx) error { return nil }, Log: slog.New(slog.DiscardHandler)})
	routes := s.app.GetRoutes(true)
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

// trialPath fills a route's parameters: :name is a tool that does not
// exist for guarded routes (so a request let through changes nothing and
// answers 404), the calculator for open ones.
func trialPath(path string, guarded bool) string {
	name := "calculator"
	if guarded {
		name = "no_such_tool"
	}
	path = strings.ReplaceAll(path, ":name", name)
	path = strings.ReplaceAll(path, ":id", "0123456789abcdef")
	return strings.ReplaceAll(path, "*", "app.css")
}

// TestAuthorizationOnEveryRoute runs a server beyond loopback with an admin
// token, and tries every route and every MCP method three ways: without
// credentials, with a wrong token, and from another site's page (with the
// right token). Guarded ones are refused each way; open ones are refused
// only from another site. The right token, from no site, gets past the
// check. Nothing of the tools changes.
func TestAuthorizationOnEveryRoute(t *testing.T) {
	in := start(t, map[string]string{"ADAPTBOT_ADDR": "0.0.0.0:0", "ADAPTBOT_ADMIN_TOKEN": "s3cret"})
	// Reach it by an address, as a client does (the MCP handler refuses a
	// Host of "[::]" arriving over loopback).
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	toolsBefore := tree(t, filepath.Join(in.dir, "tools"))

	type trial struct {
		name    string
		headers map[string]string
		refused bool // for an open route; a guarded one is refused unless allowed
		allowed bool // the right credentials from no other site
	}
	trials := []trial{
		{"without credentials", map[string]string{}, false, false},
		{"with a wrong token", map[string]string{"Authorization": "Bearer wrong"}, false, false},
		{"from another site", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}, true, false},
		{"with the token", map[string]string{"Authorization": "Bearer s3cret"}, false, true},
	}
	tried := 0
	for _, r := range registeredRoutes(t) {
		ru, ok := rule(r.Method, r.Path)
		if !ok || r.Method == fiber.MethodConnect {
			continue // no rule: the test above fails; CONNECT: Go's client cannot send it to a path
		}
		guarded := tokenNeeded(ru.action)
		path := trialPath(r.Path, guarded)
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
			refused := code == http.StatusForbidden
			switch {
			case tr.allowed && refused:
				t.Errorf("%s %s %s: 403 %s; the token must get past the check", tr.name, r.Method, path, raw)
			case !tr.allowed && (guarded || tr.refused) && !refused:
				t.Errorf("%s %s %s: %d %s; want 403", tr.name, r.Method, path, code, raw)
			case !tr.allowed && !guarded && !tr.refused && (refused || code == http.StatusUnauthorized):
				t.Errorf("%s %s %s: %d %s; an open route was refused", tr.name, r.Method, path, code, raw)
			}
		}
	}
	if tried < 4*len(routeRules) {
		t.Errorf("only %d trials for %d rules", tried, len(routeRules))
	}

	// MCP, method by method, on the wire as a client sends them.
	for _, m := range mcpRules {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": m.method, "params": json.RawMessage(m.params)})
		for _, tr := range trials[:3] {
			headers := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
			for k, v := range tr.headers {
				headers[k] = v
			}
			code, _, raw := in.send(t, "POST", "/mcp", string(body), headers)
			// Today the /mcp door needs the token for every method.
			if code != http.StatusForbidden || strings.Contains(string(raw), "1+1 = 2") {
				t.Errorf("MCP %s %s: %d %s; want 403", m.method, tr.name, code, raw)
			}
		}
	}
	// With the token, a session lists and calls: the check is not in the way.
	session := mcpSession(t, in, "Bearer s3cret")
	if out := session.call(t, "tools/call", `{"name":"calculator","arguments":{"expression":"1+1"}}`); !strings.Contains(out, "1+1 = 2") {
		t.Errorf("tools/call with the token = %s", out)
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
