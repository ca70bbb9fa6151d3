package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"adaptbot/identity"
)

// Who may use each route is docs/api.md's table (routes_test.go); a
// trial of a route sends the body below, for the routes that take one. A
// rule is allowed for a role iff the role may take its action
// (identity.Need: the one permission rule).

// trialBodies are what a trial of a route that takes a body sends, keyed
// "METHOD /path" as the edge's table writes it.
var trialBodies = map[string]string{
	"POST /chat":                      `{"message": "hello"}`,
	"POST /login/key":                 `{"key": ""}`,
	"POST /api/users":                 `{"name": "someone", "role": "nope"}`,
	"PATCH /api/users/:name":          `{"role": "nope"}`,
	"POST /api/tools/:name/run":       `{"expression": "1+1"}`,
	"POST /api/tools/build":           `{"request": "make a tool that adds one"}`,
	"POST /api/tools/:name/rollback":  `{"version": 1}`,
	"POST /api/tools/import":          `{"bundle": "AAAA"}`,
	"POST /api/tools/plan":            `{"request": "make a tool that adds one"}`,
	"POST /v1/chat/completions":       `{"model": "adaptbot", "messages": [{"role": "user", "content": "hello"}]}`,
	"POST /api/tools/:name/repair":    `{}`,
	"POST /api/requests/:id/feedback": `{"score": 1}`,
	"PUT /api/secrets/:name":          `{"value": "", "hosts": []}`,
	"POST /api/approvals/:id":         `{"decision": "allow"}`,
	"POST /api/tools/:name/trust":     `{"host": "hooks.example.org"}`,
	"* /mcp":                          `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
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

// trialPath fills a route's parameters with things that do not exist, so
// that a request let through changes nothing (and answers 404, or 400):
// the calculator only for reads.
func trialPath(method, path string) string {
	name := "no_such_tool"
	if method == fiber.MethodGet {
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
	specs := routeSpecs(t)
	routes := servedRoutes()
	for _, r := range routes {
		sp, ok := specOf(specs, r)
		if !ok {
			continue // no rule: TestEveryRouteHasAnAuthorizationRule fails
		}
		path := trialPath(r.Method, r.Path)
		for _, tr := range trials {
			headers := map[string]string{}
			for k, v := range tr.headers {
				headers[k] = v
			}
			body := trialBodies[r.Route.Method+" "+r.Path]
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
			case sp.role == "":
			case tr.role == "":
				want = http.StatusUnauthorized
			case !sp.allows(tr.role):
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
	if tried < len(trials)*len(routes) {
		t.Errorf("only %d trials for %d routes", tried, len(routes))
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
