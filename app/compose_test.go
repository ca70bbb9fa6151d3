package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/llm/llmtest"
)

// TestToolsTestOfAToolThatCallsTools: `adaptbot tools test` runs the
// examples of trip_time (testdata/tools) with the tools it calls.
func TestToolsTestOfAToolThatCallsTools(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"../tools/unit_converter", "../tools/calculator", "../testdata/tools/trip_time"} {
		name := filepath.Base(tool)
		for _, file := range []string{name + ".go", "examples.json"} {
			b, err := os.ReadFile(filepath.Join(tool, file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", name, file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := runEnv(t, cliEnv(dir, closedAddr(t)), strings.NewReader(""), "tools", "test", "trip_time")
	if err != nil || !strings.Contains(out, "2 of 2 examples pass") {
		t.Errorf("tools test trip_time = %v\n%s", err, out)
	}
}

// withTripTime drops testdata/tools/trip_time into the instance's tools.
func withTripTime(t *testing.T) func(dir string) {
	return func(dir string) {
		for _, file := range []string{"trip_time.go", "examples.json"} {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "tools", "trip_time", file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "tools", "trip_time"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", "trip_time", file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTripTimeThroughTheServer: a hand-dropped tool that calls tools runs
// from the run API and over /mcp, in the server's worker pool, and its
// entry and page say what it uses and what uses what.
func TestTripTimeThroughTheServer(t *testing.T) {
	in := start(t, nil, withTripTime(t))
	code, r := in.do(t, "POST", "/api/tools/trip_time/run", `{"miles": 100, "speed_kmh": 80}`)
	if code != 200 || r["output"] != "100 miles (160.9344 km) at 80 km/h takes 2.01168 hours (2 h 1 min)" {
		t.Errorf("run trip_time = %d %v", code, r)
	}
	code, r = in.do(t, "GET", "/api/tools/trip_time", "")
	if code != 200 || fmt.Sprint(r["uses"]) != "[calculator unit_converter]" {
		t.Errorf("GET trip_time = %d, uses %v", code, r["uses"])
	}
	if _, r = in.do(t, "GET", "/api/tools/unit_converter", ""); fmt.Sprint(r["used_by"]) != "[trip_time]" {
		t.Errorf("unit_converter used_by = %v", r["used_by"])
	}
	_, page := in.raw(t, "GET", "/tools/trip_time", "")
	for _, want := range []string{`href="/tools/unit_converter"`, `href="/tools/calculator"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the trip_time page lacks %s", want)
		}
	}
	if _, page = in.raw(t, "GET", "/tools/calculator", ""); !strings.Contains(string(page), `used by <a class="mono" href="/tools/trip_time">`) {
		t.Error("the calculator page does not say trip_time uses it")
	}

	// Over /mcp, as a client sends it: initialize, then call.
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	code, h, raw := in.send(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, hdr)
	if code != 200 {
		t.Fatalf("MCP initialize = %d %s", code, raw)
	}
	if id := h.Get("Mcp-Session-Id"); id != "" {
		hdr["Mcp-Session-Id"] = id
	}
	in.send(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	code, _, raw = in.send(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trip_time","arguments":{"miles":100,"speed_kmh":80}}}`, hdr)
	if code != 200 || !strings.Contains(string(raw), "takes 2.01168 hours") || strings.Contains(string(raw), `"isError":true`) {
		t.Errorf("trip_time over /mcp = %d %s", code, raw)
	}
}

// TestUsedToolsAreProtected: deleting a tool another uses answers 409 and
// names it; with ?force=true it goes and the caller reads as broken, with
// the reason. A run of the caller keeps its nested calls in its trace and
// lists them in the CSV's tools column.
func TestUsedToolsAreProtected(t *testing.T) {
	in := start(t, nil, withTripTime(t))
	code, r := in.do(t, "POST", "/api/tools/trip_time/run", `{"miles": 100, "speed_kmh": 80}`)
	if code != 200 {
		t.Fatalf("run trip_time = %d %v", code, r)
	}
	code, tr := in.do(t, "GET", "/api/requests/"+str(r["request_id"]), "")
	res, _ := tr["result"].(map[string]any)
	calls, _ := res["calls"].([]any)
	if code != 200 || len(calls) != 2 {
		t.Fatalf("trace of the run = %d %v", code, tr)
	}
	for i, want := range []string{"unit_converter", "calculator"} {
		c, _ := calls[i].(map[string]any)
		if c["tool"] != want || c["depth"] != float64(1) || c["output"] == "" {
			t.Errorf("nested call %d = %v", i, c)
		}
	}
	rows := in.rows(t)
	if got := rows[len(rows)-1]["tools"]; got != "trip_time;unit_converter;calculator" {
		t.Errorf("CSV tools = %q", got)
	}

	code, r = in.do(t, "DELETE", "/api/tools/unit_converter", "")
	if deps, _ := r["dependents"].([]any); code != 409 || len(deps) != 1 || deps[0] != "trip_time" || !strings.Contains(str(r["error"]), "trip_time") {
		t.Fatalf("delete of a used tool = %d %v", code, r)
	}
	if code, _ := in.do(t, "GET", "/api/tools/unit_converter", ""); code != 200 {
		t.Fatalf("a refused delete removed the tool: %d", code)
	}
	if code, r = in.do(t, "DELETE", "/api/tools/unit_converter?force=true", ""); code != 200 {
		t.Fatalf("forced delete = %d %v", code, r)
	}
	_, r = in.do(t, "GET", "/api/tools/trip_time", "")
	if r["status"] != "broken" || !strings.Contains(str(r["last_error"]), "unit_converter") {
		t.Errorf("trip_time after its callee went = %v", r)
	}
}

// TestTripTimeFromChat: a chat whose answer comes from a tool that calls
// two others keeps both nested calls in its trace, under the step that made
// them, and its CSV row lists all three tools.
func TestTripTimeFromChat(t *testing.T) {
	msg := "how long is 100 miles at 80 km/h?"
	script := newScript(map[string]string{msg: "trip_time"}, map[string]string{msg: `{"miles": 100, "speed_kmh": 80}`})
	in := start(t, modelEnv(llmtest.New(t, script.reply)), withTripTime(t))
	code, r := in.chat(t, msg)
	if code != 200 || r["path"] != "trip_time" || !strings.Contains(str(r["response"]), "2.01168 hours") {
		t.Fatalf("chat = %d %v", code, r)
	}
	var calls []any
	for _, st := range r["trace"].([]any) {
		if step, _ := st.(map[string]any); step["tool"] == "trip_time" {
			calls, _ = step["calls"].([]any)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("the trip_time step's nested calls = %v", calls)
	}
	for i, want := range []string{"unit_converter", "calculator"} {
		if c, _ := calls[i].(map[string]any); c["tool"] != want || c["depth"] != float64(1) || c["caller"] != "trip_time" {
			t.Errorf("nested call %d = %v", i, c)
		}
	}
	rows := in.rows(t)
	if len(rows) != 1 || rows[0]["tools"] != "trip_time;unit_converter;calculator" || rows[0]["category"] != "trip_time" {
		t.Errorf("rows = %v", rows)
	}
}
