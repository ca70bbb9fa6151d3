package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// TestChatUsesAnExternalMCPTool configures an external MCP server (a go-sdk
// server over streamable HTTP on loopback) and asks a question only its tool
// answers: the tool joins the router under its server, and the agent calls
// it with the same extraction, trace and benchmark row as a local tool.
func TestChatUsesAnExternalMCPTool(t *testing.T) {
	ext := sdk.NewServer(&sdk.Implementation{Name: "tides", Version: "1"}, &sdk.ServerOptions{Instructions: "Tide tables for harbours."})
	type harbourIn struct {
		Harbour string `json:"harbour" jsonschema:"the harbour's name"`
	}
	sdk.AddTool(ext, &sdk.Tool{Name: "get_tides", Description: "High and low tide times for a harbour."},
		func(_ context.Context, _ *sdk.CallToolRequest, in harbourIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "high tide in " + in.Harbour + " at 06:12"}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ext }, nil))
	t.Cleanup(ts.Close)

	script := newScript(map[string]string{"when is high tide in Brest?": "tides/get_tides"},
		map[string]string{"when is high tide in Brest?": `{"harbour": "Brest"}`})
	llmSrv := llmtest.New(t, script.reply)
	env := modelEnv(llmSrv)
	in := start(t, env, func(dir string) {
		cfg := fmt.Sprintf(`{"mcpServers": {"tides": {"url": %q}}}`, ts.URL)
		os.WriteFile(filepath.Join(dir, "mcp_servers.json"), []byte(cfg), 0o644)
		env["ADAPTBOT_MCP_CONFIG"] = filepath.Join(dir, "mcp_servers.json")
	})
	poll.Until(t, "the external server's tools", func() bool {
		_, h := in.do(t, "GET", "/healthz", "")
		m, _ := h["mcp"].(map[string]any)
		return m != nil && m["tools"] == float64(1)
	})

	code, r := in.chat(t, "when is high tide in Brest?")
	if code != 200 || r["path"] != "tides/get_tides" || r["tool_execution_success"] != true || !strings.Contains(str(r["response"]), "06:12") {
		t.Fatalf("chat = %d %v", code, r)
	}
	// The model was offered the tool under a name providers accept, with
	// its own schema (at once, or after asking for more tools, as the
	// router's index catches up with a server that just connected).
	var offered bool
	for _, req := range llmSrv.Requests() {
		if strings.Contains(string(req.Schema("tides__get_tides")), "harbour") {
			offered = true
		}
	}
	if !offered {
		t.Errorf("not offered to the classifier with its schema")
	}
	rows := in.rows(t)
	if len(rows) != 1 || rows[0]["category"] != "tides/get_tides" || rows[0]["tool_execution_success"] != "True" {
		t.Errorf("rows = %v", rows)
	}
}

// TestMCPToolCallWritesARowAndATrace: a tool call over /mcp is a run like
// any other: one CSV row (door mcp) and one stored trace, for a call that
// works and for one that fails.
func TestMCPToolCallWritesARowAndATrace(t *testing.T) {
	in := start(t, nil)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: in.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "2+3*4"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "14") {
		t.Fatalf("tools/call = %+v, %v", res, err)
	}
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "1/0"}})
	if err != nil || !res.IsError {
		t.Fatalf("failing tools/call = %+v, %v", res, err)
	}
	rows := in.rows(t)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2: %v", len(rows), rows)
	}
	for i, want := range []string{"True", "False"} {
		r := rows[i]
		if r["intent"] != "RUN" || r["category"] != "calculator" || r["door"] != "mcp" || r["tool_execution_success"] != want {
			t.Errorf("row %d = %v", i, r)
		}
		code, tr := in.do(t, "GET", "/api/requests/"+r["request_id"], "")
		if code != 200 || tr["kind"] != "run" || tr["door"] != "mcp" || tr["tool"] != "calculator" {
			t.Errorf("trace of row %d = %d %v", i, code, tr)
		}
	}
	if rows[1]["error_kind"] != "failed" {
		t.Errorf("failed call's error_kind = %q", rows[1]["error_kind"])
	}
}
