package adaptbot_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

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
			Category: "math", Origin: adaptbot.OriginBuiltin, Version: 2, Network: true, Calls: []string{"x"}, Hosts: []string{"api.example.org"}, NoDirect: true},
			`{"name":"calc","description":"d","parameters":{"type":"object"},"output":{"type":"object"},"domain":"math","origin":"builtin","version":2,"network":true,"calls":["x"],"hosts":["api.example.org"],"no_direct":true}`},
		{adaptbot.Tool{Name: "s/t", Parameters: json.RawMessage(`{}`), Category: "s", Origin: adaptbot.OriginRemote},
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

// TestToolInfoJSON: what the API shows of a tool is its entry's keys, in
// the registry file's order, then what ToolInfo adds; it reads back as it
// was.
func TestToolInfoJSON(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	info := adaptbot.ToolInfo{
		Entry: adaptbot.Entry{Tool: adaptbot.Tool{Name: "t", Description: "d", Category: "c", Parameters: json.RawMessage(`{}`),
			Version: 2, Origin: adaptbot.OriginManual, NoDirect: true}, Source: "tools/t/t.go", SHA256: "h", Status: "ok", CreatedAt: at, UpdatedAt: at},
		Code: "package t", Serving: true, Examples: json.RawMessage(`[]`), Tier: &adaptbot.TierStatus{Tier: "interpreted", State: "waiting"}}
	got, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"t","description":"d","category":"c","source":"tools/t/t.go","sha256":"h","parameters":{},"version":2,"origin":"manual",` +
		`"status":"ok","created_at":"2026-03-01T10:00:00Z","updated_at":"2026-03-01T10:00:00Z","no_direct":true,` +
		`"code":"package t","serving":true,"examples":[],"tier":{"tier":"interpreted","state":"waiting"}}`
	if string(got) != want {
		t.Errorf("Marshal = %s\nwant %s", got, want)
	}
	var back adaptbot.ToolInfo
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, info) {
		t.Errorf("read back = %+v\nwant %+v", back, info)
	}
}
