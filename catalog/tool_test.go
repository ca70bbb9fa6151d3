package catalog

import (
	"bytes"
	"encoding/json"
	"testing"

	"adaptbot"
	"adaptbot/mcp/client"
	"adaptbot/registry"
)

// TestListingJSON: `tools list --format json` writes a local tool with its
// category, version, origin and status, and an external one with its
// server and title alone, as it always has; an entry that never served is
// not listed.
func TestListingJSON(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	local := LocalTools([]registry.Entry{
		{Tool: adaptbot.Tool{Name: "calc", Description: "Adds.", Category: "math", Parameters: schema, Version: 2, Origin: adaptbot.OriginGenerated}, Status: registry.Broken, Source: "tools/calc/calc.go"},
		{Tool: adaptbot.Tool{Name: "never", Description: "Never served.", Parameters: schema}, Status: registry.Broken},
	})
	remote := external([]client.Tool{{
		Tool:   adaptbot.Tool{Name: "get_forecast", Description: "Forecast.", Parameters: schema, Output: schema, Category: "weather", Origin: adaptbot.OriginRemote},
		Server: "weather", Title: "Forecast", ServerDescription: "Weather.",
	}})
	if remote[0].ServerDescription != "Weather." {
		t.Errorf("the server's description is lost: %+v", remote[0])
	}
	var b bytes.Buffer
	if err := WriteTools(&b, FormatJSON, append(local, remote...)); err != nil {
		t.Fatal(err)
	}
	want := `[
  {
    "server": "local",
    "name": "calc",
    "description": "Adds.",
    "input_schema": {
      "type": "object"
    },
    "category": "math",
    "version": 2,
    "origin": "generated",
    "status": "broken"
  },
  {
    "server": "weather",
    "name": "get_forecast",
    "title": "Forecast",
    "description": "Forecast.",
    "input_schema": {
      "type": "object"
    }
  }
]
`
	if got := b.String(); got != want {
		t.Errorf("tools list --format json:\n got %s\nwant %s", got, want)
	}
}
