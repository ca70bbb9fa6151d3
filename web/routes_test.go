package web

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gofiber/fiber/v2"

	"adaptbot"
	"adaptbot/telemetry"
)

// TestTheTableIsWhatFiberServes: a server with metrics and /mcp registers
// exactly the route table's routes, in its order, a route of every method
// as each of Fiber's methods; without them, it leaves those two out.
func TestTheTableIsWhatFiberServes(t *testing.T) {
	a, _ := openAuth(t, authSetup{loopback: true})
	full := NewServer(&fakeService{}, a, telemetry.NewMetrics(), Options{Addr: "127.0.0.1:3000", MCP: http.NotFoundHandler()})
	var want []string
	for _, r := range table {
		if r.Method != "*" {
			want = append(want, r.Method+" "+r.Path)
			continue
		}
		for _, m := range []string{fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete, fiber.MethodPatch} {
			want = append(want, m+" "+r.Path)
		}
	}
	got := full.registered()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Fiber serves\n%v\nthe table says\n%v", got, want)
	}
	bare := NewServer(&fakeService{}, a, nil, Options{Addr: "127.0.0.1:3000"})
	for _, r := range bare.registered() {
		if r == "GET /metrics" || r == "POST /mcp" {
			t.Errorf("a server without metrics or MCP serves %s", r)
		}
	}
}

// TestRefusalOf: a refused request's row names the operation the table
// says its route is; reads and pages are no operations.
func TestRefusalOf(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         adaptbot.Refused
		ok           bool
	}{
		{"POST", "/chat", adaptbot.Refused{Intent: adaptbot.IntentChat}, true},
		{"POST", "/api/tools/build", adaptbot.Refused{Intent: adaptbot.IntentBuild}, true},
		{"POST", "/api/tools/import", adaptbot.Refused{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildImport}, true},
		{"POST", "/api/tools/calculator/run", adaptbot.Refused{Intent: adaptbot.IntentRun, Category: "calculator", Tool: "calculator"}, true},
		{"POST", "/api/tools/a%20b/test", adaptbot.Refused{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildTest, Tool: "a b"}, true},
		{"DELETE", "/api/tools/calc", adaptbot.Refused{Intent: adaptbot.IntentBuild, Category: adaptbot.CategoryBuildDelete, Tool: "calc"}, true},
		{"POST", "/api/requests/0123456789abcdef/feedback", adaptbot.Refused{Intent: adaptbot.IntentFeedback}, true},
		{"POST", "/mcp", adaptbot.Refused{Intent: adaptbot.IntentRun}, true},
		{"GET", "/mcp", adaptbot.Refused{}, false},
		{"GET", "/api/tools/calc", adaptbot.Refused{}, false},
		{"GET", "/nowhere", adaptbot.Refused{}, false},
	} {
		got, ok := refusalOf(tt.method, tt.path)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s %s = %+v, %v; want %+v, %v", tt.method, tt.path, got, ok, tt.want, tt.ok)
		}
	}
}
