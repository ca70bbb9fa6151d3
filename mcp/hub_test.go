package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/registry"
	"adaptbot/router"
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

func newHub(t *testing.T, servers []ServerConfig, opts HubOptions) *Hub {
	t.Helper()
	h := NewHub(servers, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

func TestHubHTTP(t *testing.T) {
	ts, _ := serveHTTP(t, weatherServer())
	ix := router.New()
	h := newHub(t, []ServerConfig{{Name: "weather", Transport: TransportHTTP, URL: ts.URL, Headers: map[string]string{"X-Test": "1"}}}, HubOptions{Index: ix})
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
	if _, err := h.CallTool(ctx, "elsewhere/x", nil); err == nil || !strings.Contains(err.Error(), `no MCP server named "elsewhere"`) {
		t.Errorf("CallTool on an unknown server: %v", err)
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
	servers := []ServerConfig{
		{Name: "weather", Transport: TransportHTTP, URL: ts.URL},
		{Name: "hangs", Transport: TransportHTTP, URL: hang.URL},
		{Name: "hangs-too", Transport: TransportHTTP, URL: hang.URL + "/other"},
		{Name: "hangs-longer", Transport: TransportHTTP, URL: hang.URL, Timeout: 1500 * time.Millisecond},
		{Name: "silent", Transport: TransportStdio, Command: "sleep", Args: []string{"30"}},
		{Name: "exits", Transport: TransportStdio, Command: "sh", Args: []string{"-c", "echo 'cannot open the database' >&2; exit 3"}},
		{Name: "missing", Transport: TransportStdio, Command: "adaptbot-no-such-command"},
		{Name: "refused", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	}
	h := newHub(t, servers, HubOptions{Timeout: time.Second})
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
	h := newHub(t, []ServerConfig{helperConfig(t, "helper")}, HubOptions{Timeout: 10 * time.Second})
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
	waitFor(t, "the session to end", func() bool { _, _, ok := h.byName["helper"].live(); return !ok })
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
	h := newHub(t, []ServerConfig{{Name: "weather", Transport: TransportHTTP, URL: ts.URL}}, HubOptions{})
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
	ix := router.New()
	changed := make(chan string, 8)
	h := newHub(t, []ServerConfig{{Name: "weather", Transport: TransportHTTP, URL: ts.URL}}, HubOptions{Index: ix})
	h.OnChange(func(s string, _ []toolbox.Spec) { changed <- s })
	if errs := h.Connect(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	<-changed

	sdk.AddTool(srv, &sdk.Tool{Name: "get_tides", Description: "High and low tides for a harbour."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, nil
		})
	waitFor(t, "get_tides after list_changed", func() bool { _, ok := h.Tool("weather", "get_tides"); return ok })
	if hits := ix.Route("tides harbour", 1); len(hits) == 0 || hits[0].Name != "get_tides" {
		t.Errorf("router hits = %v, want get_tides", hits)
	}

	srv.RemoveTools("get_alerts")
	waitFor(t, "get_alerts to go", func() bool { _, ok := h.Tool("weather", "get_alerts"); return !ok })
	for _, hit := range ix.Route("severe weather alerts", 5) {
		if hit.Name == "get_alerts" {
			t.Errorf("router still routes to the removed tool: %v", hit)
		}
	}
}

func TestHubListUnknownServer(t *testing.T) {
	h := newHub(t, []ServerConfig{{Name: "a", Transport: TransportHTTP, URL: "http://127.0.0.1:1"}}, HubOptions{})
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

func TestToolSet(t *testing.T) {
	w := newTestWorld(t)
	ts, _ := serveHTTP(t, weatherServer())
	h := newHub(t, []ServerConfig{{Name: "weather", Transport: TransportHTTP, URL: ts.URL}}, HubOptions{})
	if errs := h.Connect(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	set := ToolSet{Local: w.reg, Hub: h}
	var names []string
	for _, tool := range set.Serving() {
		names = append(names, tool.Name)
	}
	if want := []string{"calculator", "slow", "weather/current_conditions", "weather/get_alerts", "weather/get_forecast"}; !slices.Equal(names, want) {
		t.Errorf("Serving() = %v, want %v", names, want)
	}
	ext, ok := set.Tool("weather/get_forecast")
	if !ok || ext.Code != nil || ext.Category != "weather" || !strings.Contains(string(ext.Parameters), `"city"`) {
		t.Errorf("Tool(weather/get_forecast) = %+v, %v", ext, ok)
	}
	if local, ok := set.Tool("calculator"); !ok || local.Code == nil {
		t.Errorf("Tool(calculator) = %+v, %v", local, ok)
	}
	for _, name := range []string{"weather/nope", "nope/get_forecast", "nope"} {
		if _, ok := set.Tool(name); ok {
			t.Errorf("Tool(%q) found something", name)
		}
	}
}
