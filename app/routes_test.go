package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"adaptbot/identity"
	"adaptbot/web"
)

// The one table of what each route is to the people who use it is
// docs/api.md's: who may use each route (the least role) and whose words
// it serves. The authorization trials (authz_test.go), the privacy matrix
// (privacy_matrix_test.go) and the documentation check read it, and check
// it against the edge's route table (web.Routes), which the edge registers
// (package web checks that). So a route cannot be added without saying
// who may use it and whose words it serves, where its users read it.

// routeSpec is what docs/api.md says of one route.
type routeSpec struct {
	// role is the least role that may use the route; "" is public.
	role identity.Role
	// words is whose words a GET route serves.
	words wordsRule
}

// leastAction is, for each role, an action that role is the least to take:
// a spec is allowed for a role iff the role may take its role's action
// (identity.Need, the one permission rule).
var leastAction = map[identity.Role]identity.Action{identity.User: identity.Chat, identity.Builder: identity.Build, identity.Admin: identity.Manage}

// allows reports whether who may use a route of spec sp.
func (sp routeSpec) allows(who identity.Role) bool {
	return sp.role == "" || (identity.Identity{Role: who}).Can(leastAction[sp.role])
}

// routeSpecs reads docs/api.md's table of routes, keyed "METHOD /path"
// with the edge's parameters (":name" where the docs write "<name>").
func routeSpecs(t testing.TB) map[string]routeSpec {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(GET|POST|PUT|PATCH|DELETE) (/[^`]*)` \\| (public|user|builder|admin) \\| (none|author|admin|door|–) \\|")
	param := regexp.MustCompile(`<(\w+)>`)
	words := map[string]wordsRule{"none": noWords, "author": byAuthor, "admin": adminOnly, "door": door}
	out := map[string]routeSpec{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		sp := routeSpec{words: words[m[4]]}
		if m[3] != "public" {
			sp.role = identity.Role(m[3])
		}
		key := m[1] + " " + param.ReplaceAllString(m[2], ":$1")
		if _, dup := out[key]; dup {
			t.Errorf("docs/api.md has %s twice", key)
		}
		if m[1] == fiber.MethodGet && sp.words == 0 {
			t.Errorf("docs/api.md: %s does not say whose words it serves", key)
		}
		out[key] = sp
	}
	if len(out) < 40 {
		t.Fatalf("docs/api.md's table of routes has %d routes: is it still a table of `METHOD /path` | who | words?", len(out))
	}
	return out
}

// servedRoute is one method and path the edge serves, and its row of the
// edge's table.
type servedRoute struct {
	Method, Path string
	Route        web.Route
}

// allMethods are the methods Fiber registers a route of every method
// ("*", /mcp) for, but HEAD (GET's) and CONNECT (which Go's client cannot
// send to a path).
var allMethods = []string{fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete, fiber.MethodOptions, fiber.MethodTrace, fiber.MethodPatch}

// servedRoutes are the edge's routes, method by method, a route of every
// method as each method it answers.
func servedRoutes() []servedRoute {
	var out []servedRoute
	for _, r := range web.Routes() {
		if r.Method != "*" {
			out = append(out, servedRoute{r.Method, r.Path, r})
			continue
		}
		for _, m := range allMethods {
			out = append(out, servedRoute{m, r.Path, r})
		}
	}
	return out
}

// specOf returns the spec of a served route. A route of every method is
// documented method by method where its methods differ (GET /mcp's stream,
// POST /mcp's calls, DELETE /mcp's end); the methods the docs leave out
// answer as POST does.
func specOf(specs map[string]routeSpec, r servedRoute) (routeSpec, bool) {
	if sp, ok := specs[r.Method+" "+r.Path]; ok {
		return sp, true
	}
	if r.Route.Method == "*" {
		sp, ok := specs[fiber.MethodPost+" "+r.Path]
		return sp, ok
	}
	return routeSpec{}, false
}

// TestEveryRouteHasAnAuthorizationRule: every route the edge serves says
// in docs/api.md who may use it, the role the edge checks before anything
// is decoded (web.Route.Need) is that one, and the docs name no route the
// edge does not serve.
func TestEveryRouteHasAnAuthorizationRule(t *testing.T) {
	specs := routeSpecs(t)
	used := map[string]bool{}
	for _, r := range servedRoutes() {
		sp, ok := specOf(specs, r)
		if !ok {
			t.Errorf("%s %s has no row in docs/api.md: say who may use it, and whose words it serves", r.Method, r.Path)
			continue
		}
		used[r.Method+" "+r.Path] = true
		if need := r.Route.Need; need != "" && identity.Need(need) != sp.role {
			t.Errorf("%s %s: the edge asks for the %s role (%s), docs/api.md says %q", r.Method, r.Path, identity.Need(need), need, sp.role)
		}
	}
	for key := range specs {
		if !used[key] {
			t.Errorf("docs/api.md has %s, which the edge does not serve", key)
		}
	}
}
