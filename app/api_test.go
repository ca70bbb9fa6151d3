package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// waitTool waits until the server serves name.
func waitTool(t *testing.T, in *instance, name string) {
	t.Helper()
	poll.Until(t, name+" to serve", func() bool {
		code, r := in.do(t, "GET", "/api/tools/"+name, "")
		return code == 200 && r["serving"] == true
	})
}

// TestToolListAPI: GET /api/tools lists every entry, serving or broken,
// with its status, and the count.
func TestToolListAPI(t *testing.T) {
	in := start(t, nil)
	writeTool(t, in.dir, "broken_tool", "// Package broken_tool does not compile.\npackage broken_tool\n\nfunc Execute( {\n")
	var r map[string]any
	poll.Until(t, "the broken tool to be listed", func() bool {
		_, r = in.do(t, "GET", "/api/tools", "")
		return strings.Contains(str(r["tools"]), "broken_tool")
	})
	tools, _ := r["tools"].([]any)
	if r["count"] != float64(len(tools)) || len(tools) != 6 {
		t.Fatalf("count %v, %d tools; want the 5 shipped and the broken one", r["count"], len(tools))
	}
	byName := map[string]map[string]any{}
	for _, x := range tools {
		e := x.(map[string]any)
		byName[str(e["name"])] = e
	}
	for _, name := range []string{"calculator", "current_time", "text_stats", "unit_converter", "weather_forecast"} {
		e := byName[name]
		if e == nil || e["serving"] != true || e["status"] != "ok" || e["version"] != float64(1) || str(e["description"]) == "" {
			t.Errorf("%s = %v", name, e)
		}
	}
	if b := byName["broken_tool"]; b["serving"] != false || b["status"] != "broken" || str(b["last_error"]) == "" {
		t.Errorf("broken_tool = %v; want listed as broken with its error", b)
	}
}

// TestRequestsLimit: GET /api/requests lists the newest stored requests
// first, as many as ?limit says (at least 1), without their results.
func TestRequestsLimit(t *testing.T) {
	in := start(t, nil)
	var ids []string
	for i := range 5 {
		code, r := in.do(t, "POST", "/api/tools/calculator/run", fmt.Sprintf(`{"expression": "%d+1"}`, i))
		if code != 200 {
			t.Fatalf("run %d = %d %v", i, code, r)
		}
		ids = append(ids, str(r["request_id"]))
	}
	list := func(query string) []string {
		t.Helper()
		code, r := in.do(t, "GET", "/api/requests"+query, "")
		if code != 200 {
			t.Fatalf("GET /api/requests%s = %d %v", query, code, r)
		}
		var got []string
		for _, x := range r["requests"].([]any) {
			rec := x.(map[string]any)
			if rec["result"] != nil {
				t.Errorf("the list carries a result: %v", rec)
			}
			got = append(got, str(rec["request_id"]))
		}
		return got
	}
	newest := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"", newest},
		{"?limit=2", newest[:2]},
		{"?limit=1", newest[:1]},
		{"?limit=0", newest[:1]},
		{"?limit=-3", newest[:1]},
		{"?limit=1000", newest},
	} {
		if got := list(tt.query); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("GET /api/requests%s = %v, want %v", tt.query, got, tt.want)
		}
	}
}

// TestDiffAPI: the diff of two kept versions is a unified diff of their
// sources, with the numbers it compared.
func TestDiffAPI(t *testing.T) {
	in := start(t, nil)
	src, err := os.ReadFile("../tools/calculator/calculator.go")
	if err != nil {
		t.Fatal(err)
	}
	writeTool(t, in.dir, "calculator", strings.Replace(string(src), `"the expression is empty"`, `"the expression is blank"`, 1))
	poll.Until(t, "version 2", func() bool {
		_, r := in.do(t, "GET", "/api/tools/calculator", "")
		return r["version"] == float64(2)
	})
	code, r := in.do(t, "GET", "/api/tools/calculator/diff", "")
	diff := str(r["diff"])
	if code != 200 || r["from"] != float64(1) || r["to"] != float64(2) || r["same"] != false {
		t.Fatalf("diff = %d %v", code, r)
	}
	for _, want := range []string{`-`, `"the expression is empty"`, `+`, `"the expression is blank"`, "@@"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	var removed, added int
	for _, line := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---"):
			removed++
			if !strings.Contains(line, "is empty") {
				t.Errorf("removed line %q is not the one changed", line)
			}
		case strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++"):
			added++
			if !strings.Contains(line, "is blank") {
				t.Errorf("added line %q is not the one changed", line)
			}
		}
	}
	if removed != 1 || added != 1 {
		t.Errorf("%d lines removed, %d added; want 1 and 1:\n%s", removed, added, diff)
	}
	if code, r := in.do(t, "GET", "/api/tools/calculator/diff?from=2&to=2", ""); code != 200 || r["same"] != true || str(r["diff"]) != "" {
		t.Errorf("a version against itself = %d %v", code, r)
	}
	for query, want := range map[string]int{"?from=0": 400, "?from=x": 400, "?to=9": 404} {
		if code, r := in.do(t, "GET", "/api/tools/calculator/diff"+query, ""); code != want {
			t.Errorf("diff%s = %d %v, want %d", query, code, r, want)
		}
	}
	if code, _ := in.do(t, "GET", "/api/tools/no_such_tool/diff", ""); code != 404 {
		t.Errorf("diff of a missing tool = %d", code)
	}
}

// waitSource is a tool that runs until its context ends: only the client
// leaving (or the 60s limit) stops it.
const waitSource = `// Package wait_tool waits until it is stopped.
package wait_tool

import "context"

// Input is empty.
type Input struct{}

// Execute waits for the end of its context.
func Execute(ctx context.Context, in Input) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}
`

// leave sends a request in the background and returns a function that
// leaves it: cancels it and waits for the client side to end.
func leave(t *testing.T, in *instance, method, path, body string, headers map[string]string) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, method, in.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// busy is how many sandbox workers are serving a call.
func busy(t *testing.T, in *instance) int {
	t.Helper()
	_, r := in.do(t, "GET", "/healthz", "")
	sb, _ := r["sandbox"].(map[string]any)
	n, _ := sb["busy"].(float64)
	return int(n)
}

// toolStopsWhenLeft waits until the tool a request started runs, leaves
// the request, and checks the tool stops within seconds.
func toolStopsWhenLeft(t *testing.T, in *instance, leave func()) {
	t.Helper()
	poll.Until(t, "the tool to run", func() bool { return busy(t, in) == 1 })
	left := time.Now()
	leave()
	poll.Until(t, "the tool to stop", func() bool { return busy(t, in) == 0 })
	if took := time.Since(left); took > 5*time.Second {
		t.Errorf("the tool stopped %v after its client left", took)
	}
}

// TestClientLeavingCancelsItsWork: a direct run, a plan and a tool call
// over /mcp stop when their client leaves, long before their own limits
// (60s for the tool, a hanging model for the plan).
func TestClientLeavingCancelsItsWork(t *testing.T) {
	llmSrv := llmtest.New(t, llmtest.Always(llmtest.Hang()))
	env := modelEnv(llmSrv)
	env["ADAPTBOT_TOOL_TIMEOUT"] = "60s"
	in := start(t, env, func(dir string) { writeTool(t, dir, "wait_tool", waitSource) })
	waitTool(t, in, "wait_tool")

	t.Run("direct run", func(t *testing.T) {
		toolStopsWhenLeft(t, in, leave(t, in, "POST", "/api/tools/wait_tool/run", `{}`, nil))
		poll.Until(t, "its row", func() bool {
			for _, row := range in.rows(t) {
				if row["category"] == "wait_tool" && row["intent"] == "RUN" {
					return row["tool_execution_success"] == "False"
				}
			}
			return false
		})
	})

	t.Run("plan", func(t *testing.T) {
		before := llmSrv.Cancelled()
		stop := leave(t, in, "POST", "/api/tools/plan", `{"request": "make a tool that flips coins"}`, nil)
		poll.Until(t, "the model to be asked", func() bool { return llmSrv.InFlight() == 1 })
		stop()
		if !llmSrv.WaitCancelled(before+1, 10*time.Second) {
			t.Error("the plan's model request was not cancelled when its client left")
		}
	})

	t.Run("mcp tools/call", func(t *testing.T) {
		c := mcpSession(t, in, "")
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{"name": "wait_tool", "arguments": map[string]any{}}})
		toolStopsWhenLeft(t, in, leave(t, in, "POST", "/mcp", string(body), c.headers()))
	})
}
