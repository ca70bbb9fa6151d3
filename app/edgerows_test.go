package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	nethttp "net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/poll"
)

// twinSource is a tool whose result breaks its output schema: two fields
// share the JSON name "n", so encoding/json writes neither, and the schema
// requires it.
const twinSource = `// Package twin counts, badly.
package twin

import "context"

// Category is the tool's domain.
const Category = "test"

// Input is nothing.
type Input struct {
	X int ` + "`json:\"x\"`" + `
}

// Output is the count, twice under one name.
type Output struct {
	A int ` + "`json:\"n\"`" + `
	B int ` + "`json:\"n\"`" + `
}

// Execute counts.
func Execute(ctx context.Context, in Input) (Output, error) {
	return Output{A: in.X, B: in.X}, nil
}
`

// TestMCPOutputOutsideItsSchemaIsTheRowsFailure: over /mcp, a result that
// breaks the tool's output schema reaches the client as a tool error, and
// the call's one row records that failure (it said ok while the SDK's
// check came after it).
func TestMCPOutputOutsideItsSchemaIsTheRowsFailure(t *testing.T) {
	in := start(t, nil, func(dir string) { writeTool(t, dir, "twin", twinSource) })
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: in.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "twin", Arguments: map[string]any{"x": 2}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "does not match its output schema") {
		t.Fatalf("tools/call = %+v, %v; want a tool error about the output schema", res, err)
	}
	rows := in.rows(t)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1: %v", len(rows), rows)
	}
	r := rows[0]
	if r["category"] != "twin" || r["door"] != "mcp" || r["tool_execution_success"] != "False" || r["error_kind"] != "failed" ||
		!strings.Contains(r["error_message"], "does not match its output schema") {
		t.Errorf("row = %v, want the twin call's failure", r)
	}
}

// teamWorld starts a server beyond loopback with an admin token and adds
// a builder, ann: her key and pseudonym.
func teamWorld(t *testing.T, env map[string]string) (in *instance, key, pseudonym string) {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	env["ADAPTBOT_ADDR"] = "0.0.0.0:0"
	env["ADAPTBOT_ADMIN_TOKEN"] = "s3cret-admin-token"
	in = start(t, env)
	in.url = "http://127.0.0.1:" + in.url[strings.LastIndex(in.url, ":")+1:]
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	code, _, raw := in.send(t, "POST", "/api/users", `{"name": "ann", "role": "builder"}`, admin)
	body := jsonBody(t, raw)
	if code != 201 {
		t.Fatalf("add ann = %d %s", code, raw)
	}
	return in, str(body["key"]), str(body["user"].(map[string]any)["pseudonym"])
}

// oneRow checks that the CSV holds exactly one row more than it did
// (before rows), written for the refusal answered with raw: the caller's
// pseudonym, door, intent, category and kind, and the request ID the
// answer gave.
func oneRow(t *testing.T, in *instance, before int, raw []byte, want map[string]string) {
	t.Helper()
	rows := in.rows(t)
	if len(rows) != before+1 {
		t.Errorf("%s: %d new rows, want 1: %v", want["error_kind"], len(rows)-before, rows[min(before, len(rows)):])
		return
	}
	r := rows[before]
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s: row's %s = %q, want %q (row %v)", want["error_kind"], k, r[k], v, r)
		}
	}
	if r["error_message"] == "" {
		t.Errorf("%s: row without an error message: %v", want["error_kind"], r)
	}
	if raw != nil {
		if id := str(jsonBody(t, raw)["request_id"]); id == "" || id != r["request_id"] {
			t.Errorf("%s: answer's request_id %q, row's %q: %s", want["error_kind"], id, r["request_id"], raw)
		}
	}
}

// TestEdgeRefusalsWriteTheirRow: each refusal the edge makes before an
// operation begins (a bundle that is not one, an empty message, a message
// or a body too large, the server busy, a client over its rate, an unknown
// tool over /mcp) writes exactly one row, with the caller's pseudonym and
// door, and the answer names the row. Before, they wrote none. The steps
// share one server, in order: the first five count against ann's rate.
func TestEdgeRefusalsWriteTheirRow(t *testing.T) {
	llmSrv, free := holdingModel(t)
	env := modelEnv(llmSrv)
	env["ADAPTBOT_MAX_INFLIGHT"] = "1"
	env["ADAPTBOT_RATE_LIMIT"] = "4/min"
	in, key, ann := teamWorld(t, env)
	admin := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret-admin-token"}
	code, _, raw := in.send(t, "POST", "/api/users", `{"name": "bob", "role": "user"}`, admin)
	if code != 201 {
		t.Fatalf("add bob = %d %s", code, raw)
	}
	bobKey, bob := str(jsonBody(t, raw)["key"]), str(jsonBody(t, raw)["user"].(map[string]any)["pseudonym"])
	as := func(key string) map[string]string {
		return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}
	}
	annHTTP := map[string]string{"user": ann, "door": "http"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	refused := func(t *testing.T, key, path, body string, status int, want map[string]string) {
		t.Helper()
		n := len(in.rows(t))
		code, _, raw := in.send(t, "POST", path, body, as(key))
		if code != status {
			t.Errorf("POST %s = %d %s, want %d", path, code, raw, status)
		}
		oneRow(t, in, n, raw, want)
	}

	t.Run("bad bundle", func(t *testing.T) {
		refused(t, key, "/api/tools/import", `{"bundle": "not base64!"}`, 400,
			with(annHTTP, "intent", "BUILD", "category", "build_import", "error_kind", "invalid"))
	})
	t.Run("empty message", func(t *testing.T) {
		refused(t, key, "/chat", `{"message": "  "}`, 400, with(annHTTP, "intent", "CHAT", "error_kind", "invalid"))
	})
	t.Run("message too large", func(t *testing.T) {
		big, _ := json.Marshal(map[string]string{"message": strings.Repeat("a", 32<<10+1)})
		refused(t, key, "/chat", string(big), 413, with(annHTTP, "intent", "CHAT", "error_kind", "invalid"))
	})
	t.Run("busy", func(t *testing.T) {
		// ann's chat holds the only slot; bob's is refused for it.
		held := make(chan int, 1)
		go func() {
			code, _, _ := in.send(t, "POST", "/chat", `{"message":"hold on"}`, as(key))
			held <- code
		}()
		poll.Until(t, "the first chat to reach the model", func() bool { return len(llmSrv.Requests()) > 0 })
		refused(t, bobKey, "/chat", `{"message":"hello"}`, 503, map[string]string{"user": bob, "door": "http", "intent": "CHAT", "error_kind": "unavailable"})
		free()
		if code := <-held; code != 200 {
			t.Errorf("held chat = %d", code)
		}
	})
	t.Run("over the rate", func(t *testing.T) {
		refused(t, key, "/chat", `{"message":"hello"}`, 429, with(annHTTP, "intent", "CHAT", "error_kind", "limited"))
	})
	t.Run("body too large", func(t *testing.T) {
		// Refused from its Content-Length, before any handler.
		n := len(in.rows(t))
		conn, err := net.Dial("tcp", strings.TrimPrefix(in.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/tools/calculator/run HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", key, 2<<20)
		resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 413 {
			t.Errorf("oversized body = %d %s", resp.StatusCode, raw)
		}
		oneRow(t, in, n, raw, with(annHTTP, "intent", "RUN", "category", "calculator", "error_kind", "invalid"))
	})
	t.Run("unknown tool over mcp", func(t *testing.T) {
		client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: in.url + "/mcp", HTTPClient: &nethttp.Client{Transport: &keyTransport{key: key}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		n := len(in.rows(t))
		if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil && !res.IsError {
			t.Errorf("unknown tool = %+v", res)
		}
		oneRow(t, in, n, nil, map[string]string{"user": ann, "door": "mcp", "intent": "RUN", "category": "no_such_tool", "error_kind": "not_found"})
	})
}
