package client

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/mcp/config"
)

// TestHubUsesStructuredContent calls a tool whose server sends both a
// human summary as text and the result as structured content: the hub
// keeps the structured result, and the tool's output schema reaches the
// toolbox.
func TestHubUsesStructuredContent(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "stats", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	type out struct {
		Words int `json:"words"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "count", Description: "Counts words."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, out, error) {
			res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "There are two words."}}}
			return res, out{Words: 2}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fails."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, out, error) {
			res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no words here"}}}
			return res, out{}, nil
		})
	ts, _ := serveHTTP(t, s)
	h := newHub(t, []config.Server{{Name: "stats", Transport: config.TransportHTTP, URL: ts.URL}}, Options{})
	ctx := context.Background()

	tools, errs := h.List(ctx)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(tools) != 2 || json.Unmarshal(tools[0].Spec().Output, &schema) != nil || schema.Type != "object" || schema.Properties["words"] == nil {
		t.Fatalf("tools = %+v: want count's output schema in its spec", tools)
	}

	got, err := h.Call(ctx, "stats", "count", json.RawMessage(`{"text": "two words"}`))
	if err != nil || got != `{"words":2}` {
		t.Errorf("count = %q, %v; want the structured result {\"words\":2}", got, err)
	}
	if _, err := h.Call(ctx, "stats", "fail", json.RawMessage(`{"text": ""}`)); err == nil || err.Error() != "stats/fail: no words here" {
		t.Errorf("fail = %v; want the error's text, not its structured content", err)
	}
}
