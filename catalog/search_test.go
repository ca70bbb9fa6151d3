package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/mcp/client"
	"adaptbot/mcp/config"
)

// catalog is a small mixed set of tools: two local, three external.
var catalog = []Tool{
	{Tool: adaptbot.Tool{Name: "calculator", Category: "math", Description: "Evaluates an arithmetic expression such as 2 + 3 * 4.", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"the arithmetic expression"}}}`)}, Server: Local},
	{Tool: adaptbot.Tool{Name: "weather_forecast", Category: "weather", Description: "Gets the Forecast for a city, days ahead.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}`)}, Server: Local},
	{Tool: adaptbot.Tool{Name: "get_forecast", Description: "Get the weather forecast for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"city name"}}}`)}, Server: "weather", Title: "Forecast"},
	{Tool: adaptbot.Tool{Name: "get_alerts", Description: "List severe weather alerts for a US state.", Parameters: json.RawMessage(`{"type":"object","properties":{"state":{"type":"string","description":"two-letter code"}}}`)}, Server: "weather"},
	{Tool: adaptbot.Tool{Name: "read_file", Description: "Read a file from disk.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"where the file is"}}}`)}, Server: "files", Title: "Read file"},
}

func ids(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID()
	}
	return out
}

func TestDetectMode(t *testing.T) {
	tests := []struct {
		query string
		want  Mode
	}{
		{"weather", ModeSubstring},
		{"read file", ModeSubstring},
		{"v1.2", ModeSubstring}, // a dot alone is too common to mean regex
		{"^get_", ModeRegex},
		{"file|disk", ModeRegex},
		{"get_(forecast|alerts)", ModeRegex},
		{"read,file", ModeKeywords},
		{"a,b|c", ModeRegex}, // regex wins over commas
	}
	for _, tt := range tests {
		if got := DetectMode(tt.query); got != tt.want {
			t.Errorf("DetectMode(%q) = %s, want %s", tt.query, got, tt.want)
		}
	}
}

func TestSearchModes(t *testing.T) {
	tests := []struct {
		name  string
		query string
		opts  SearchOptions
		want  []string // sorted by server then tool, to test matching alone
	}{
		{"substring", "forecast", SearchOptions{}, []string{"weather_forecast", "weather/get_forecast"}},
		{"substring is case-insensitive", "FORECAST", SearchOptions{}, []string{"weather_forecast", "weather/get_forecast"}},
		{"case-sensitive", "Forecast", SearchOptions{CaseSensitive: true}, []string{"weather_forecast", "weather/get_forecast"}}, // title "Forecast"
		{"case-sensitive, lower", "Forecast", SearchOptions{CaseSensitive: true, Fields: []Field{FieldDescription}}, []string{"weather_forecast"}},
		{"regex", "^get_", SearchOptions{}, []string{"weather/get_alerts", "weather/get_forecast"}},
		{"regex alternation", "disk|arithmetic", SearchOptions{}, []string{"calculator", "files/read_file"}},
		{"keywords: all must match", "weather, city", SearchOptions{}, []string{"weather_forecast", "weather/get_forecast"}},
		{"keywords across fields", "read_file,disk", SearchOptions{}, []string{"files/read_file"}},
		{"keywords: none has both", "city,disk", SearchOptions{}, nil},
		{"word", "file", SearchOptions{Mode: ModeWord}, []string{"files/read_file"}},
		{"word splits snake_case", "forecast", SearchOptions{Mode: ModeWord, Fields: []Field{FieldName}}, []string{"weather_forecast", "weather/get_forecast"}},
		{"word is whole", "fore", SearchOptions{Mode: ModeWord}, nil},
		{"substring is not", "fore", SearchOptions{Mode: ModeSubstring}, []string{"weather_forecast", "weather/get_forecast"}},
		{"fields: name only", "city", SearchOptions{Fields: []Field{FieldName}}, nil},
		{"fields: schema", "two-letter", SearchOptions{Fields: []Field{FieldSchema}}, []string{"weather/get_alerts"}},
		{"fields: schema property names", "expression", SearchOptions{Fields: []Field{FieldSchema}}, []string{"calculator"}},
		{"forced substring keeps metacharacters", "2 + 3", SearchOptions{Mode: ModeSubstring}, []string{"calculator"}},
		{"empty query matches all", "", SearchOptions{}, []string{"calculator", "weather_forecast", "files/read_file", "weather/get_alerts", "weather/get_forecast"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Sort = SortServer
			rs, err := Search(catalog, tt.query, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(rs); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("Search(%q, %+v) = %v, want %v", tt.query, tt.opts, got, tt.want)
			}
		})
	}
}

func TestSearchSortsAndLimits(t *testing.T) {
	// By score: the router ranks the external forecast tool (name, title
	// and description) and the local one above the alerts.
	rs, err := Search(catalog, "weather forecast city", SearchOptions{Mode: ModeKeywords})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 0 {
		t.Errorf("keywords mode with one keyword containing spaces matched %v", ids(rs))
	}
	rs, err = Search(catalog, "forecast", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Score <= 0 || rs[0].Score < rs[1].Score {
		t.Fatalf("results = %+v, want two, best first, with scores", rs)
	}
	rs, _ = Search(catalog, "get_", SearchOptions{Sort: SortTool})
	if got, want := ids(rs), []string{"weather/get_alerts", "weather/get_forecast"}; !slices.Equal(got, want) {
		t.Errorf("by tool = %v, want %v", got, want)
	}
	rs, _ = Search(catalog, "", SearchOptions{Sort: SortTool, Limit: 2})
	if got, want := ids(rs), []string{"calculator", "weather/get_alerts"}; !slices.Equal(got, want) {
		t.Errorf("by tool, limit 2 = %v, want %v", got, want)
	}
}

func TestSearchBadInput(t *testing.T) {
	if _, err := Search(catalog, "get_(forecast", SearchOptions{}); err == nil || !strings.Contains(err.Error(), "bad regular expression \"get_(forecast\": missing closing )") {
		t.Errorf("bad regex: %v", err)
	}
	for _, s := range []string{"fuzzy"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted it", s)
		}
	}
	if _, err := ParseFields("name,body"); err == nil || !strings.Contains(err.Error(), `unknown field "body"`) {
		t.Errorf("ParseFields: %v", err)
	}
	if fs, err := ParseFields("name, schema,name"); err != nil || !slices.Equal(fs, []Field{FieldName, FieldSchema}) {
		t.Errorf("ParseFields = %v, %v", fs, err)
	}
	if _, err := ParseSort("date"); err == nil {
		t.Error("ParseSort accepted date")
	}
	if _, err := ParseFormat("yaml"); err == nil {
		t.Error("ParseFormat accepted yaml")
	}
}

// TestCatalogSearch searches local and external tools together, with a
// failing server: partial results by default, a failure when strict.
func TestCatalogSearch(t *testing.T) {
	ts := weatherServer(t)
	hub := client.NewHub([]config.Server{
		{Name: "weather", Transport: config.TransportHTTP, URL: ts.URL},
		{Name: "broken", Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", "exit 1"}},
	}, client.Options{Timeout: 5 * time.Second})
	t.Cleanup(func() { hub.Close() })
	c := Catalog{Local: catalog[:2], Hub: hub}
	ctx := context.Background()

	rs, errs, err := c.Search(ctx, "forecast", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(rs), []string{"weather/get_forecast", "weather_forecast"}; !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("results = %v, want %v", got, want)
	}
	if len(errs) != 1 || errs[0].Server != "broken" || !strings.Contains(errs[0].Error(), "server broken: the command exited while connecting (exit status 1)") {
		t.Errorf("errs = %v", errs)
	}

	if _, _, err := c.Search(ctx, "forecast", SearchOptions{Strict: true}); err == nil || !strings.Contains(err.Error(), "1 of 2 servers did not answer, and the search is strict") {
		t.Errorf("strict search: %v", err)
	}
	if _, _, err := c.Search(ctx, "(", SearchOptions{}); err == nil {
		t.Error("a bad regex searched anyway")
	}

	tools, errs := c.List(ctx, Local)
	if len(tools) != 2 || len(errs) != 0 {
		t.Errorf("List(local) = %v, %v", tools, errs)
	}
	tools, errs = c.List(ctx, "weather")
	if len(tools) != 3 || len(errs) != 0 {
		t.Errorf("List(weather) = %d tools, %v", len(tools), errs)
	}
}

// weatherServer serves three weather tools over streamable HTTP.
func weatherServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, &sdk.ServerOptions{
		Instructions: "Weather forecasts and current conditions for any city.",
	})
	type cityIn struct {
		City string `json:"city" jsonschema:"the city name"`
	}
	answer := func(_ context.Context, _ *sdk.CallToolRequest, in cityIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + in.City}}}, nil, nil
	}
	sdk.AddTool(s, &sdk.Tool{Name: "get_forecast", Description: "Get the weather forecast for a city."}, answer)
	sdk.AddTool(s, &sdk.Tool{Name: "get_alerts", Description: "List severe weather alerts for a city."}, answer)
	sdk.AddTool(s, &sdk.Tool{Name: "current_conditions", Title: "Current conditions", Description: "Temperature and wind now."}, answer)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestWriteResults(t *testing.T) {
	rs, _ := Search(catalog, "forecast", SearchOptions{Sort: SortServer})
	for _, format := range []string{FormatText, FormatTable, FormatJSON} {
		var b bytes.Buffer
		if err := WriteResults(&b, format, rs); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "weather_forecast") || !strings.Contains(out, "get_forecast") {
			t.Errorf("%s output lacks the tools:\n%s", format, out)
		}
		if format == FormatJSON {
			var back []Result
			if err := json.Unmarshal(b.Bytes(), &back); err != nil || len(back) != 2 || back[0].Server != Local {
				t.Errorf("json output does not read back: %v\n%s", err, out)
			}
		}
	}
	var b bytes.Buffer
	WriteTools(&b, FormatText, catalog[:1])
	if got, want := b.String(), "calculator [local, math]\n    Evaluates an arithmetic expression such as 2 + 3 * 4.\n"; got != want {
		t.Errorf("WriteTools text = %q, want %q", got, want)
	}
}
