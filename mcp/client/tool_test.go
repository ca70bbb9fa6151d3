package client

import (
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
)

// TestListedToolSpec: a server's tool is described as the server gave it,
// and the toolbox sees it named "server/tool", its title in its
// description, its server its domain.
func TestListedToolSpec(t *testing.T) {
	listed := fromSDK("weather", "Weather.", &sdk.Tool{Name: "get_forecast", Title: "Forecast", Description: "Get the weather for a city.",
		InputSchema: map[string]any{"type": "object"}, OutputSchema: map[string]any{"type": "object"}})
	if listed.Name != "get_forecast" || listed.Server != "weather" || listed.ID() != "weather/get_forecast" || !listed.Remote() {
		t.Errorf("listed = %+v", listed)
	}
	want := adaptbot.Tool{Name: "weather/get_forecast", Description: "Forecast. Get the weather for a city.",
		Parameters: json.RawMessage(`{"type":"object"}`), Output: json.RawMessage(`{"type":"object"}`), Category: "weather", Origin: adaptbot.OriginRemote}
	if got := listed.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("Spec() = %+v, want %+v", got, want)
	}
	if got := fromSDK("s", "", &sdk.Tool{Name: "x"}); string(got.Parameters) != `{"type":"object"}` || got.Output != nil {
		t.Errorf("a tool without schemas: parameters %s, output %s", got.Parameters, got.Output)
	}
	for _, tt := range []struct{ title, desc, want string }{
		{"", "Does it.", "Does it."},
		{"Forecast", "", "Forecast"},
		{"Forecast", "Forecast for a city.", "Forecast for a city."},
		{"Forecast", "For a city.", "Forecast. For a city."},
	} {
		if got := Text(tt.title, tt.desc); got != tt.want {
			t.Errorf("Text(%q, %q) = %q, want %q", tt.title, tt.desc, got, tt.want)
		}
	}
}
