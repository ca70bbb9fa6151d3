package main

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
