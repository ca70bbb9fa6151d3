package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// shippedWorld serves the named tools from ../../tools in a registry of
// their own, run in an in-process sandbox.
func shippedWorld(t *testing.T, names ...string) *testWorld {
	t.Helper()
	dir := t.TempDir()
	toolsDir := filepath.Join(dir, "tools")
	for _, name := range names {
		src, err := os.ReadFile(filepath.Join("..", "..", "tools", name, name+".go"))
		if err != nil {
			t.Fatal(err)
		}
		writeTool(t, toolsDir, name, string(src))
	}
	runner := sandbox.NewInProcess(sandbox.Options{})
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: toolsDir, Path: filepath.Join(dir, "tools_registry.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Len() != len(names) {
		t.Fatalf("registry serves %d tools, want %d; warnings: %q", reg.Len(), len(names), reg.Warnings())
	}
	return &testWorld{dir: dir, reg: reg, runner: runner}
}

// TestToolsListDescribesResultsAndEffects checks what tools/list tells a
// client beyond the input schema: the output schema of a tool that returns
// an Output struct, and the annotations.
func TestToolsListDescribesResultsAndEffects(t *testing.T) {
	w := shippedWorld(t, "calculator", "text_stats", "weather_forecast")
	srv := New(toolbox.New(w.reg, w.runner), Options{})
	cs, _ := connectInMemory(t, srv, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	tests := []struct {
		name, title       string
		output            bool
		readOnly, network bool
	}{
		{"calculator", "Calculator", false, true, false},
		{"text_stats", "Text stats", true, true, false},
		{"weather_forecast", "Weather forecast", true, false, true},
	}
	for _, tt := range tests {
		tool := tools[tt.name]
		if tool == nil {
			t.Fatalf("tools/list has no %s", tt.name)
		}
		if tool.Title != tt.title || tool.Annotations == nil || tool.Annotations.Title != tt.title {
			t.Errorf("%s: title %q, annotations %+v; want title %q", tt.name, tool.Title, tool.Annotations, tt.title)
			continue
		}
		a := tool.Annotations
		if a.ReadOnlyHint != tt.readOnly || a.OpenWorldHint == nil || *a.OpenWorldHint != tt.network {
			t.Errorf("%s: readOnlyHint %v, openWorldHint %v; want %v, %v", tt.name, a.ReadOnlyHint, a.OpenWorldHint, tt.readOnly, tt.network)
		}
		if (tool.OutputSchema != nil) != tt.output {
			t.Errorf("%s: output schema %v, want one: %v", tt.name, tool.OutputSchema, tt.output)
		}
	}
	entry, _ := w.reg.Entry("text_stats")
	var want any
	json.Unmarshal(entry.Output, &want)
	if got, want := mustJSON(tools["text_stats"].OutputSchema), mustJSON(want); got != want {
		t.Errorf("text_stats output schema = %s, want the registry's %s", got, want)
	}
}

// TestStructuredContentValidates calls text_stats, a tool with an Output
// struct, and checks its structuredContent against the output schema the
// client listed, with a validator of its own; the text stays for older
// clients.
func TestStructuredContentValidates(t *testing.T) {
	w := shippedWorld(t, "calculator", "text_stats")
	srv := New(toolbox.New(w.reg, w.runner), Options{})
	cs, _ := connectInMemory(t, srv, "")
	ctx := context.Background()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	for _, tool := range res.Tools {
		if tool.Name == "text_stats" {
			b, _ := json.Marshal(tool.OutputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
		}
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("listed output schema: %v", err)
	}

	call, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "text_stats", Arguments: map[string]any{"text": "The cat sat. The cat ran!"}})
	if err != nil || call.IsError {
		t.Fatalf("text_stats: %v %+v", err, call)
	}
	raw, _ := json.Marshal(call.StructuredContent)
	var structured map[string]any
	if err := json.Unmarshal(raw, &structured); err != nil {
		t.Fatalf("structuredContent %s: %v", raw, err)
	}
	if err := resolved.Validate(structured); err != nil {
		t.Errorf("structuredContent %s does not validate against the listed output schema: %v", raw, err)
	}
	if structured["words"] != float64(6) || structured["sentences"] != float64(2) {
		t.Errorf("structuredContent = %s, want 6 words, 2 sentences", raw)
	}
	var text map[string]any
	if len(call.Content) != 1 || json.Unmarshal([]byte(call.Content[0].(*sdk.TextContent).Text), &text) != nil || !reflect.DeepEqual(text, structured) {
		t.Errorf("content = %v, want the same JSON as text", call.Content)
	}

	// A tool without Output answers with text alone.
	calc, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "calculator", Arguments: map[string]any{"expression": "2+3*4"}})
	if err != nil || calc.IsError || calc.StructuredContent != nil {
		t.Errorf("calculator: %v, structured %v", err, calc.StructuredContent)
	}
}

// TestResultOutsideItsSchemaIsAToolError serves a tool whose result breaks
// the output schema it publishes: the client gets a tool error that says
// so, not structured content its own check would refuse.
func TestResultOutsideItsSchemaIsAToolError(t *testing.T) {
	srv := New(fakeBox{tools: []toolbox.Tool{fakeTool{
		spec: toolbox.Spec{Name: "liar", Description: "Says it counts.", Parameters: json.RawMessage(`{"type":"object"}`),
			Output: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		out: `{"n":"many"}`,
	}}}, Options{})
	cs, _ := connectInMemory(t, srv, "")
	text, isErr := callText(t, cs, "liar", map[string]any{})
	if !isErr || !strings.Contains(text, "tool liar: bad_output: its result does not match its output schema") {
		t.Errorf("liar = %q (isError %v), want a tool error about its output schema", text, isErr)
	}
}

func TestAnnotationsFollowCalls(t *testing.T) {
	local := map[string]toolbox.Spec{
		"fetch":  {Name: "fetch", Network: true},
		"report": {Name: "report", Calls: []string{"fetch"}},
		"math":   {Name: "math"},
	}
	for name, open := range map[string]bool{"fetch": true, "report": true, "math": false} {
		a := Annotations(local[name], local)
		if *a.OpenWorldHint != open || a.ReadOnlyHint == open {
			t.Errorf("%s: openWorldHint %v, readOnlyHint %v; want %v, %v", name, *a.OpenWorldHint, a.ReadOnlyHint, open, !open)
		}
	}
}

// fakeBox is a Box of fixed tools.
type fakeBox struct{ tools []toolbox.Tool }

var _ toolbox.Box = fakeBox{}

func (b fakeBox) Tool(name string) (toolbox.Tool, bool) {
	for _, t := range b.tools {
		if t.Spec().Name == name {
			return t, true
		}
	}
	return nil, false
}
func (b fakeBox) Serving() []toolbox.Tool            { return b.tools }
func (b fakeBox) Len() int                           { return len(b.tools) }
func (b fakeBox) OnChange(fn func(c toolbox.Change)) {}

// fakeTool answers every call with out.
type fakeTool struct {
	spec toolbox.Spec
	out  string
}

func (f fakeTool) Spec() toolbox.Spec { return f.spec }
func (f fakeTool) Call(context.Context, json.RawMessage) (string, error) {
	return f.out, nil
}

// TestUnknownToolIsRefusedOnce: a tools/call of a tool the server does not
// publish is answered by the SDK as before, and Options.Refuse hears of it
// once, so the call has its row; a call that runs is not a refusal.
func TestUnknownToolIsRefusedOnce(t *testing.T) {
	type refusal struct {
		name, args string
		err        error
	}
	var mu sync.Mutex
	var heard []refusal
	srv := New(fakeBox{tools: []toolbox.Tool{fakeTool{
		spec: toolbox.Spec{Name: "echo", Description: "Echoes.", Parameters: json.RawMessage(`{"type":"object"}`)},
		out:  "hi",
	}}}, Options{Refuse: func(_ context.Context, name string, args json.RawMessage, err error) {
		mu.Lock()
		heard = append(heard, refusal{name, string(args), err})
		mu.Unlock()
	}})
	cs, _ := connectInMemory(t, srv, "")
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "missing", Arguments: map[string]any{"x": 1}}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("unknown tool: %v, want the SDK's refusal", err)
	}
	if text, isErr := callText(t, cs, "echo", map[string]any{}); isErr || text != "hi" {
		t.Errorf("echo = %q (isError %v)", text, isErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0].name != "missing" || heard[0].args != `{"x":1}` || !errors.Is(heard[0].err, toolbox.ErrNotFound) {
		t.Errorf("refusals heard = %+v, want one of missing", heard)
	}
}
