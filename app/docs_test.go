package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestEveryRouteIsDocumented: every route the server registers has a line
// in docs/api.md ("`METHOD /path`", with ":param" written "<param>"), and
// docs/api.md documents no route that is gone. A route added without its
// documentation fails here.
func TestEveryRouteIsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	documented := map[string]bool{}
	// Every "METHOD /path" in a code span of the routes table.
	for _, m := range regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE) (/[^`?\\s]*)").FindAllStringSubmatch(doc, -1) {
		documented[m[1]+" "+m[2]] = false
	}
	param := regexp.MustCompile(`:(\w+)`)
	for _, r := range servedRoutes() {
		switch r.Method {
		case fiber.MethodHead, fiber.MethodOptions, fiber.MethodConnect, fiber.MethodTrace:
			continue // Fiber's own, for every GET or for All
		}
		key := r.Method + " " + param.ReplaceAllString(r.Path, "<$1>")
		if _, ok := documented[key]; ok {
			documented[key] = true
			continue
		}
		if r.Path == "/mcp" && r.Method != fiber.MethodGet && r.Method != fiber.MethodPost && r.Method != fiber.MethodDelete {
			continue // All("/mcp"): the streamable HTTP transport answers these itself
		}
		t.Errorf("%s is not documented in docs/api.md", key)
	}
	for key, seen := range documented {
		if !seen {
			t.Errorf("docs/api.md documents %s, which the server does not register", key)
		}
	}
}
