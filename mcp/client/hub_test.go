package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/config"
	"adaptbot/poll"
	"adaptbot/registry"
	"adaptbot/router"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// weatherServer is an in-test go-sdk server with a page size of 2, so that
// listing its 3 tools takes pagination.
func weatherServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, &sdk.ServerOptions{
		Instructions: "Weather forecasts and current conditions for any city.",
		PageSize:     2,
	})
	type cityIn struct {
		City string `json:"city" jsonschema:"the city name"`
		Days int    `json:"days,omitempty" jsonschema:"how many days ahead"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "get_forecast", Description: "Get the weather forecast for a city."},
		func(_ context.Context, _ *sdk.CallToolRequest, in cityIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "get_alerts", Description: "List severe weather alerts for a city."},
		func(_ context.Context, _ *sdk.CallToolRequest, in cityIn) (*sdk.CallToolResult, any, error) {
			return nil, nil, fmt.Errorf("no alert service for %s", in.City)
		})
	sdk.AddTool(s, &sdk.Tool{Name: "current_conditions", Title: "Current conditions", Description: "Temperature and wind now."},
		func(_ context.Context, _ *sdk.CallToolRequest, in cityIn) (*sdk.CallToolResult, any, error) {
			return nil, map[string]any{"city": in.City, "temp_c": 21}, nil
		})
	return s
}

// swappable serves whatever handler it holds, so a test can restart the
// server behind a fixed URL.
type swappable struct{ h atomic.Pointer[http.Handler] }

func (s *swappable) set(h http.Handler) { s.h.Store(&h) }

func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*s.h.Load()).ServeHTTP(w, r) }

func serveHTTP(t *testing.T, srv *sdk.Server) (*httptest.Server, *swappable) {
	t.Helper()
	sw := &swappable{}
	sw.set(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	ts := httptest.NewServer(sw)
	t.Cleanup(ts.Close)
	return ts, sw
}

// hangingServer accepts connections and never answers.
func hangingServer(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); ts.Close() })
	return ts
}

func newHub(t *testing.T, servers []config.Server, opts Options) *Hub {
	t.Helper()
	h := NewHub(servers, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

func TestHubHTTP(t *testing.T) {
	ts, _ := serveHTTP(t, weatherServer())
	h := newHub(t, []config.Server{{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL, Headers: map[string]string{"X-Test": "1"}}}, Options{})
	ix := feedRouter(h)
	ctx := context.Background()

	tools, errs := h.List(ctx)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.ID())
	}
	if want := []string{"weather/current_conditions", "weather/get_alerts", "weather/get_forecast"}; !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v (all pages)", names, want)
	}
	if tools[0].Title != "Current conditions" || tools[0].ServerDescription != "Weather forecasts and current conditions for any city." {
		t.Errorf("tool = %+v", tools[0])
	}
	if hits := ix.Route("forecast for Paris", 1); len(hits) != 1 || hits[0] != (router.Hit{Server: "weather", Name: "get_forecast", Score: hits[0].Score}) {
		t.Errorf("router hits = %v, want weather/get_forecast", hits)
	}

	tests := []struct {
		tool, args string
		want       string
		wantErr    bool
	}{
		{"get_forecast", `{"city": "Paris"}`, "sunny in Paris", false},
		{"current_conditions", `{"city": "Oslo"}`, `{"city":"Oslo","temp_c":21}`, false},
		{"get_forecast", `{"town": "Paris"}`, "weather/get_forecast: invalid arguments", true},
		{"get_forecast", `{"city": 3}`, "city", true},
		{"get_alerts", `{"city": "Rome"}`, "weather/get_alerts: no alert service for Rome", true},
		{"nope", `{}`, `server weather has no tool "nope"`, true},
	}
	// Calls go through the toolbox, which validates the arguments; a tool
	// it does not know goes to the hub, which lists the server again.
	box := toolbox.New(&fakeRegistry{}, nil)
	box.Join(h)
	for _, tt := range tests {
		var out string
		var err error
		if tool, ok := box.Tool("weather/" + tt.tool); ok {
			out, err = tool.Call(ctx, json.RawMessage(tt.args))
		} else {
			out, err = h.Call(ctx, "weather", tt.tool, json.RawMessage(tt.args))
		}
		got := out
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != tt.wantErr || !strings.Contains(got, tt.want) {
			t.Errorf("Call(%s, %s) = %q, %v; want %q (error: %v)", tt.tool, tt.args, out, err, tt.want, tt.wantErr)
		}
	}
	if _, err := h.Call(ctx, "elsewhere", "x", nil); err == nil || !strings.Contains(err.Error(), `no MCP server named "elsewhere"`) {
		t.Errorf("Call on an unknown server: %v", err)
	}
}

// fakeRegistry is a registry with no tools, for a toolbox of external
// tools only.
type fakeRegistry struct{}

func (fakeRegistry) Serving() []registry.Tool          { return nil }
func (fakeRegistry) Tool(string) (registry.Tool, bool) { return registry.Tool{}, false }
func (fakeRegistry) OnChange(func(registry.Event))     {}

func TestHubPartialResults(t *testing.T) {
	ts, _ := serveHTTP(t, weatherServer())
	hang := hangingServer(t)
	servers := []config.Server{
		{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL},
		{Name: "hangs", Transport: config.TransportHTTP, URL: hang.URL},
		{Name: "hangs-too", Transport: config.TransportHTTP, URL: hang.URL + "/other"},
		{Name: "hangs-longer", Transport: config.TransportHTTP, URL: hang.URL, Timeout: 1500 * time.Millisecond},
		{Name: "silent", Transport: config.TransportStdio, Command: "sleep", Args: []string{"30"}},
		{Name: "exits", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", "echo 'cannot open the database' >&2; exit 3"}},
		{Name: "missing", Transport: config.TransportStdio, Command: "adaptbot-no-such-command"},
		{Name: "refused", Transport: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	}
	h := newHub(t, servers, Options{Timeout: time.Second})
	start := time.Now()
	tools, errs := h.List(context.Background())
	elapsed := time.Since(start)

	if len(tools) != 3 {
		t.Errorf("got %d tools, want weather's 3 despite the others", len(tools))
	}
	want := map[string]string{
		"hangs":        "no answer within 1s while connecting",
		"hangs-too":    "no answer within 1s while connecting",
		"hangs-longer": "no answer within 1.5s while connecting",
		"silent":       "no answer within 1s while connecting",
		"exits":        "the command exited while connecting (exit status 3): cannot open the database",
		"missing":      "start adaptbot-no-such-command",
		"refused":      "connecting",
	}
	var order []string
	for _, e := range errs {
		order = append(order, e.Server)
		if w, ok := want[e.Server]; !ok || !strings.Contains(e.Error(), w) {
			t.Errorf("error %q, want it to say %q", e, w)
		}
		delete(want, e.Server)
	}
	for server := range want {
		t.Errorf("no error reported for %s", server)
	}
	if wantOrder := []string{"hangs", "hangs-too", "hangs-longer", "silent", "exits", "missing", "refused"}; !slices.Equal(order, wantOrder) {
		t.Errorf("errors in order %v, want the configuration's %v", order, wantOrder)
	}
	// In parallel, and each within its limit: about the longest limit,
	// 1.5s, far from the 5.5s of the limits one after another.
	if elapsed > 3500*time.Millisecond {
		t.Errorf("listing took %v: servers are not listed in parallel", elapsed)
	}
}

func TestHubStdioReconnects(t *testing.T) {
	h := newHub(t, []config.Server{helperConfig(t, "helper")}, Options{Timeout: 10 * time.Second})
	ctx := context.Background()
	first, err := h.Call(ctx, "helper", "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.Call(ctx, "helper", "exit_soon", nil); err != nil || out != "bye" {
		t.Fatalf("exit_soon = %q, %v", out, err)
	}
	// The process is gone (a race-enabled binary takes a second to exit);
	// the next call starts it again.
	poll.Until(t, "the session to end", func() bool { _, _, ok := h.byName["helper"].live(); return !ok })
	second, err := h.Call(ctx, "helper", "pid", nil)
	if err != nil {
		t.Fatalf("call after the server exited: %v", err)
	}
	if first == second {
		t.Errorf("same pid %s before and after the server exited", first)
	}
	if tools := h.Tools(); len(tools) != 4 || tools[0].ServerDescription != "A helper server for tests." {
		t.Errorf("tools = %+v", tools)
	}
}

func TestHubHTTPReconnectsAfterRestart(t *testing.T) {
	srv := weatherServer()
	ts, sw := serveHTTP(t, srv)
	h := newHub(t, []config.Server{{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	ctx := context.Background()
	if _, err := h.Call(ctx, "weather", "get_forecast", json.RawMessage(`{"city":"Paris"}`)); err != nil {
		t.Fatal(err)
	}
	// A restarted server has forgotten every session.
	sw.set(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return weatherServer() }, nil))
	out, err := h.Call(ctx, "weather", "get_forecast", json.RawMessage(`{"city":"Lyon"}`))
	if err != nil || out != "sunny in Lyon" {
		t.Fatalf("call after restart = %q, %v; want a reconnect and an answer", out, err)
	}
}

func TestHubRefreshesOnListChanged(t *testing.T) {
	srv := weatherServer()
	ts, _ := serveHTTP(t, srv)
	h := newHub(t, []config.Server{{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	ix := feedRouter(h)
	// Registered after the toolbox's: when it hears a list, the router has
	// it too.
	lists := make(chan []string, 8)
	h.OnChange(func(s string, specs []toolbox.Spec) {
		var names []string
		for _, sp := range specs {
			names = append(names, sp.Name)
		}
		lists <- names
	})
	if errs := h.Connect(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	<-lists
	waitList := func(what string, ok func([]string) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case names := <-lists:
				if ok(names) {
					return
				}
			case <-timeout:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	sdk.AddTool(srv, &sdk.Tool{Name: "get_tides", Description: "High and low tides for a harbour."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, nil
		})
	waitList("get_tides after list_changed", func(names []string) bool { return slices.Contains(names, "weather/get_tides") })
	if _, ok := h.Tool("weather", "get_tides"); !ok {
		t.Error("the hub does not know get_tides")
	}
	if hits := ix.Route("tides harbour", 1); len(hits) == 0 || hits[0].Name != "get_tides" {
		t.Errorf("router hits = %v, want get_tides", hits)
	}

	srv.RemoveTools("get_alerts")
	waitList("get_alerts to go", func(names []string) bool { return !slices.Contains(names, "weather/get_alerts") })
	if _, ok := h.Tool("weather", "get_alerts"); ok {
		t.Error("the hub still knows get_alerts")
	}
	for _, hit := range ix.Route("severe weather alerts", 5) {
		if hit.Name == "get_alerts" {
			t.Errorf("router still routes to the removed tool: %v", hit)
		}
	}
}

// feedRouter wires h as the server does: the hub's tools join a toolbox,
// whose changes feed a router index, with each server's description.
func feedRouter(h *Hub) *router.Index {
	box := toolbox.New(fakeRegistry{}, nil)
	box.Join(h)
	return router.NewFeed(router.New(), box, router.FeedOptions{Describe: h.Description}).Index()
}

func TestHubListUnknownServer(t *testing.T) {
	h := newHub(t, []config.Server{{Name: "a", Transport: config.TransportHTTP, URL: "http://127.0.0.1:1"}}, Options{})
	_, errs := h.List(context.Background(), "b")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "server b: not in the configuration (servers: a)") {
		t.Errorf("errs = %v", errs)
	}
}

func TestDefaultEnvPassesNoSecrets(t *testing.T) {
	env := DefaultEnv(func(k string) string {
		return map[string]string{"PATH": "/bin", "HOME": "/home/x", "OPENAI_API_KEY": "sk-secret"}[k]
	})
	if got, want := strings.Join(env, " "), "PATH=/bin HOME=/home/x"; got != want {
		t.Errorf("DefaultEnv = %q, want %q", got, want)
	}
}

// TestBoxWithHub checks AdaptBot's own tools and the hub's as one toolbox:
// an external tool is "server/tool", with its server as its domain.
func TestBoxWithHub(t *testing.T) {
	reg, runner := localTools(t)
	ts, _ := serveHTTP(t, weatherServer())
	h := newHub(t, []config.Server{{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	box := toolbox.New(reg, runner)
	box.Join(h)
	if errs := h.Connect(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	var names []string
	for _, tool := range box.Serving() {
		names = append(names, tool.Spec().Name)
	}
	if want := []string{"calculator", "weather/current_conditions", "weather/get_alerts", "weather/get_forecast"}; !slices.Equal(names, want) {
		t.Errorf("Serving() = %v, want %v", names, want)
	}
	if n := box.Len(); n != 4 {
		t.Errorf("Len() = %d, want 4", n)
	}
	ext, ok := box.Tool("weather/get_forecast")
	if !ok || !ext.Spec().Remote() || ext.Spec().Category != "weather" || !strings.Contains(string(ext.Spec().Parameters), `"city"`) {
		t.Errorf("Tool(weather/get_forecast) = %+v, %v", ext, ok)
	}
	if out, err := ext.Call(context.Background(), json.RawMessage(`{"city": "Paris"}`)); err != nil || out != "sunny in Paris" {
		t.Errorf("weather/get_forecast = %q, %v", out, err)
	}
	if local, ok := box.Tool("calculator"); !ok || local.Spec().Remote() {
		t.Errorf("Tool(calculator) = %+v, %v", local, ok)
	}
	for _, name := range []string{"weather/nope", "nope/get_forecast", "nope"} {
		if _, ok := box.Tool(name); ok {
			t.Errorf("Tool(%q) found something", name)
		}
	}
}

// localTools is a real registry over a temp folder holding the calculator
// from ../../tools, with an in-process sandbox.
func localTools(t *testing.T) (*registry.Registry, sandbox.Runner) {
	t.Helper()
	dir := t.TempDir()
	calc, err := os.ReadFile(filepath.Join("..", "..", "tools", "calculator", "calculator.go"))
	if err != nil {
		t.Fatal(err)
	}
	toolsDir := filepath.Join(dir, "tools")
	if err := os.MkdirAll(filepath.Join(toolsDir, "calculator"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(toolsDir, "calculator", "calculator.go"), calc, 0o644); err != nil {
		t.Fatal(err)
	}
	runner := sandbox.NewInProcess(sandbox.Options{})
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: toolsDir, Path: filepath.Join(dir, "tools_registry.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	return reg, runner
}
