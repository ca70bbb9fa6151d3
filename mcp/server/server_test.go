package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/poll"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// echoSource is a small tool; desc lets a test change its description.
func echoSource(name, desc string) string {
	return "// Package " + name + " " + desc + "\npackage " + name + `

import "context"

// Input is the text to echo.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text to echo\"`" + `
}

// Execute echoes the text.
func Execute(ctx context.Context, in Input) (string, error) { return "echo: " + in.Text, nil }
`
}

// slowSource never finishes within its 200ms limit.
const slowSource = `// Package slow waits until its time limit ends it.
package slow

import (
	"context"
	"time"
)

// Timeout is the tool's own limit.
const Timeout = 200 * time.Millisecond

// Input is empty.
type Input struct{}

// Execute waits for the end of its context.
func Execute(ctx context.Context, in Input) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}
`

// testWorld is a real registry over a temp folder, seeded with the
// calculator from ../tools and the slow tool, and an in-process sandbox.
type testWorld struct {
	dir    string
	reg    *registry.Registry
	runner sandbox.Runner
}

func newTestWorld(t *testing.T) *testWorld {
	t.Helper()
	dir := t.TempDir()
	toolsDir := filepath.Join(dir, "tools")
	calc, err := os.ReadFile(filepath.Join("..", "..", "tools", "calculator", "calculator.go"))
	if err != nil {
		t.Fatal(err)
	}
	writeTool(t, toolsDir, "calculator", string(calc))
	writeTool(t, toolsDir, "slow", slowSource)
	runner := sandbox.NewInProcess(sandbox.Options{})
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: toolsDir, Path: filepath.Join(dir, "tools_registry.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	if got := reg.Len(); got != 2 {
		t.Fatalf("registry serves %d tools, want 2; warnings: %q", got, reg.Warnings())
	}
	return &testWorld{dir: dir, reg: reg, runner: runner}
}

func writeTool(t *testing.T, toolsDir, name, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(toolsDir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(toolsDir, name, name+".go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// connectInMemory connects a client to srv; changed receives one value per
// notifications/tools/list_changed.
func connectInMemory(t *testing.T, srv *Server, protocol string) (*sdk.ClientSession, <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.sdk.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	changed := make(chan struct{}, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func callText(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error %v, want a result", name, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError
}

func TestServerListsAndCalls(t *testing.T) {
	w := newTestWorld(t)
	srv := New(toolbox.New(w.reg, w.runner), Options{})
	cs, _ := connectInMemory(t, srv, "")

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var calc *sdk.Tool
	for _, tool := range res.Tools {
		if tool.Name == "calculator" {
			calc = tool
		}
	}
	if calc == nil {
		t.Fatalf("tools/list = %v, want calculator", toolNames(t, cs))
	}
	if !strings.HasPrefix(calc.Description, "Evaluates an arithmetic expression") {
		t.Errorf("description = %q", calc.Description)
	}
	schema, _ := json.Marshal(calc.InputSchema)
	entry, _ := w.reg.Entry("calculator")
	var got, want any
	json.Unmarshal(schema, &got)
	json.Unmarshal(entry.Parameters, &want)
	if gs, ws := mustJSON(got), mustJSON(want); gs != ws {
		t.Errorf("input schema = %s, want the registry's %s", gs, ws)
	}

	tests := []struct {
		name    string
		tool    string
		args    any
		want    string
		isError bool
	}{
		{"ok", "calculator", map[string]any{"expression": "2+3"}, "2+3 = 5", false},
		{"missing argument", "calculator", map[string]any{}, "tool calculator: invalid arguments", true},
		{"wrong type", "calculator", map[string]any{"expression": 5}, "expression", true},
		{"unknown argument", "calculator", map[string]any{"expression": "1", "x": 1}, "x", true},
		{"tool error", "calculator", map[string]any{"expression": "1/0"}, "tool calculator: error", true},
		{"time limit", "slow", map[string]any{}, "tool slow: timeout", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isError := callText(t, cs, tt.tool, tt.args)
			if isError != tt.isError || !strings.Contains(text, tt.want) {
				t.Errorf("call %s(%v) = %q (isError %v), want %q (isError %v)", tt.tool, tt.args, text, isError, tt.want, tt.isError)
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestServerFollowsRegistry checks list_changed on create, modify, hand
// edit and delete, for clients of the legacy and the current protocol.
func TestServerFollowsRegistry(t *testing.T) {
	for _, protocol := range []string{"2025-06-18", ""} {
		name := protocol
		if name == "" {
			name = "latest"
		}
		t.Run(name, func(t *testing.T) {
			w := newTestWorld(t)
			srv := New(toolbox.New(w.reg, w.runner), Options{})
			cs, changed := connectInMemory(t, srv, protocol)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ready := make(chan struct{})
			watched := make(chan error, 1)
			go func() { watched <- w.reg.Watch(ctx, ready) }()
			<-ready
			defer func() { cancel(); <-watched }()

			// Create, as the generator does.
			if _, err := w.reg.Put(ctx, "echo", []byte(echoSource("echo", "echoes text.")), registry.PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
				t.Fatal(err)
			}
			waitChanged(t, changed, "create")
			if names := toolNames(t, cs); !slices.Contains(names, "echo") {
				t.Fatalf("after create, tools/list = %v, want echo", names)
			}
			if text, isErr := callText(t, cs, "echo", map[string]any{"text": "hi"}); isErr || text != "echo: hi" {
				t.Errorf("echo = %q, %v", text, isErr)
			}

			// Edit by hand: the watcher picks it up.
			writeTool(t, filepath.Join(w.dir, "tools"), "echo", echoSource("echo", "repeats text back."))
			waitChanged(t, changed, "hand edit")
			poll.Until(t, "the new description", func() bool {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, tool := range res.Tools {
					if tool.Name == "echo" {
						return tool.Description == "Repeats text back."
					}
				}
				return false
			})

			// Delete.
			if _, err := w.reg.Delete(ctx, "echo"); err != nil {
				t.Fatal(err)
			}
			waitChanged(t, changed, "delete")
			if names := toolNames(t, cs); slices.Contains(names, "echo") {
				t.Fatalf("after delete, tools/list = %v, still has echo", names)
			}
			// A tool that is gone is a protocol error (the spec's "unknown
			// tool"), not a tool error.
			if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err == nil {
				t.Error("deleted echo still answers")
			}
		})
	}
}

// waitChanged waits for a list_changed notification, draining any extra.
func waitChanged(t *testing.T, changed <-chan struct{}, after string) {
	t.Helper()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after %s", after)
	}
}

func TestInputSchemaRejectsNonObjects(t *testing.T) {
	for _, s := range []string{``, `{`, `{"type":"string"}`, `[]`} {
		if _, err := inputSchema(json.RawMessage(s)); err == nil {
			t.Errorf("inputSchema(%q) accepted it", s)
		}
	}
	if _, err := inputSchema(json.RawMessage(`{"type":"object"}`)); err != nil {
		t.Error(err)
	}
}
