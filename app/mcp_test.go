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
	waitUntil(t, "the external server's tools", func() bool {
		_, h := in.do(t, "GET", "/healthz", "")
		m, _ := h["mcp"].(map[string]any)
		return m != nil && m["tools"] == float64(1)
	})

	code, r := in.chat(t, "when is high tide in Brest?")
	if code != 200 || r["path"] != "tides/get_tides" || r["tool_execution_success"] != true || !strings.Contains(str(r["response"]), "06:12") {
		t.Fatalf("chat = %d %v", code, r)
	}
	// The classifier was offered the tool under a name providers accept,
	// with its own schema, and chose it with its arguments in that call.
	var offered bool
	for _, req := range llmSrv.Requests() {
		if isClassifier(req) && strings.Contains(string(req.Schema("tides__get_tides")), "harbour") {
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
