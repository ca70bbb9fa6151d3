package adaptbot_test

import (
	"encoding/json"
	"testing"

	"adaptbot"
)

// TestToolJSON: a tool's description keeps the keys it had as
// toolbox.Spec, in the same order, its optional parts left out when empty.
func TestToolJSON(t *testing.T) {
	for _, tt := range []struct {
		tool adaptbot.Tool
		want string
	}{
		{adaptbot.Tool{Name: "calc", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`), Output: json.RawMessage(`{"type":"object"}`),
			Domain: "math", Origin: adaptbot.OriginBuiltin, Version: 2, Network: true, Calls: []string{"x"}, Hosts: []string{"api.example.org"}, NoDirect: true},
			`{"name":"calc","description":"d","parameters":{"type":"object"},"output":{"type":"object"},"domain":"math","origin":"builtin","version":2,"network":true,"calls":["x"],"hosts":["api.example.org"],"no_direct":true}`},
		{adaptbot.Tool{Name: "s/t", Parameters: json.RawMessage(`{}`), Domain: "s", Origin: adaptbot.OriginRemote},
			`{"name":"s/t","description":"","parameters":{},"domain":"s","origin":"mcp"}`},
	} {
		got, err := json.Marshal(tt.tool)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("Marshal = %s\nwant %s", got, tt.want)
		}
	}
	if (adaptbot.Tool{Origin: adaptbot.OriginRemote}).Remote() == (adaptbot.Tool{Origin: adaptbot.OriginBuiltin}).Remote() {
		t.Error("Remote does not tell a server's tool from a local one")
	}
}
