package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/api"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/registry"
	"adaptbot/service"
	"adaptbot/shipping"
)

// TestAPIBodiesMatchTheServer: what the server answers, every field set,
// decodes into the api package's body of the same name with no field
// unknown, and encodes back to the same JSON; so a client (the CLI) that
// reads an answer and prints it as JSON loses nothing, and a field added on
// one side only fails here.
func TestAPIBodiesMatchTheServer(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	report := generator.ExampleReport{Tool: "t", Version: 2, OK: false, Skipped: "s",
		Results: []generator.ExampleResult{{Example: generator.Example{Input: json.RawMessage(`{"a":1}`), Contains: "c", Matches: "m"}, Output: "o", Error: "e", OK: true}}}
	entry := registry.Entry{Tool: adaptbot.Tool{Name: "t", Description: "d", Category: "c", Parameters: json.RawMessage(`{"type":"object"}`), Output: json.RawMessage(`{"type":"string"}`), Network: true, Calls: []string{"u"}, Version: 3, Origin: "generated"}, Source: "s", SHA256: "h", TimeoutMS: 5, Status: "ok", LastError: "l", PendingVersion: 4, PendingSHA256: "p", CreatedAt: at, UpdatedAt: at, Warning: "w", Uses: []string{"u"}, UsedBy: []string{"b"}}
	for _, tt := range []struct {
		name   string
		server any
		client any
	}{
		{"build result", generator.Result{Op: generator.Modify, Tool: "t", OK: true, Version: 2, Attempts: 1, Error: "e", Summary: "s", Pending: true,
			Log:        []generator.Attempt{{Number: 1, Errors: []string{"x"}, Source: "src", Fixed: []string{"f"}}},
			Dependents: []generator.ExampleReport{report},
			Cases:      []generator.CaseResult{{ID: "c", Input: json.RawMessage(`{}`), OK: true, Outcome: generator.OutcomeResult, Output: "o", Error: "e", Example: true}}},
			&api.BuildResult{}},
		{"event", generator.Event{Stage: "write", Message: "m", Attempt: 1, Of: 3, Tool: "t", Example: 1, Examples: 2, Summary: "s", Inputs: []string{"a"}, Problems: []string{"p"}}, &api.Event{}},
		{"example report", report, &api.ExampleReport{}},
		{"run result", service.RunResult{Tool: "t", Version: 1, Output: "o", Ms: 1.5, RequestID: "r"}, &api.RunResult{}},
		{"tool", service.ToolInfo{Entry: entry, Code: "package t", Serving: true, PendingCode: "package t // v2", Examples: json.RawMessage(`[{"input":{}}]`)}, &api.Tool{}},
		{"version", registry.Version{Version: 1, SHA256: "h", SavedAt: at, Current: true, Pending: true, Note: "n"}, &api.Version{}},
		{"imported", shipping.Imported{Name: "n", From: "f", Version: 1, Status: registry.Pending, Replaced: true}, &api.ImportedTool{}},
		{"user", users.Info{Name: "ann", Role: identity.Admin, Pseudonym: "p", Created: at, Rotated: at}, &api.User{}},
		{"failure report", service.FailureReport{Tool: "t", Version: 2, PendingVersion: 3, Open: 1, Errors: 2, Unconfirmed: 3, Keep: 50,
			Auto:    service.AutoStatus{Mode: "on", After: 3, SinceChange: 1, Every: "1h"},
			Cases:   []failures.Case{{ID: "c", Tool: "t", Version: 2, Args: json.RawMessage(`{}`), ArgsBytes: 2, Exact: true, Kind: adaptbot.FailPanic, Message: "m", Comment: "c", Count: 2, FirstSeen: at, LastSeen: at, RequestID: "r", Status: failures.Open, FixedIn: 3}},
			Repairs: []failures.Repair{{At: at, RequestID: "r", Auto: true, From: 2, Version: 3, Pending: true, OK: true, Cases: []string{"c"}, Fixed: []string{"c"}, Error: "e"}}},
			&api.FailureReport{}},
		{"repair request", service.RepairRequest{Cases: []string{"c"}}, &api.RepairRequest{}},
	} {
		want, err := json.Marshal(tt.server)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(want))
		dec.DisallowUnknownFields()
		if err := dec.Decode(tt.client); err != nil {
			t.Errorf("%s: the server's %s does not decode into %T: %v", tt.name, want, tt.client, err)
			continue
		}
		got, _ := json.Marshal(tt.client)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: through %T\n got %s\nwant %s", tt.name, tt.client, got, want)
		}
	}
}
