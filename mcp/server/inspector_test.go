package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The official MCP Inspector's command-line mode is a client no one here
// wrote: listing and calling AdaptBot's tools through it checks that
// `adaptbot mcp` speaks MCP, not merely what our own SDK accepts.
//
// The test finds the inspector at $ADAPTBOT_INSPECTOR, else at
// ../.cache/inspector/node_modules/.bin/mcp-inspector (what
// `npm install --prefix .cache/inspector @modelcontextprotocol/inspector@2.12.0`
// makes), else through npx if npm's cache already holds it. Without it the
// test skips on a developer's machine, and fails in CI (CI=true, or
// ADAPTBOT_REQUIRE_INSPECTOR=1 as .ci/run sets), where npm must be there.

const inspectorPackage = "@modelcontextprotocol/inspector@2.12.0"

func inspectorCommand(t *testing.T) []string {
	t.Helper()
	if p := os.Getenv("ADAPTBOT_INSPECTOR"); p != "" {
		return []string{p}
	}
	local, err := filepath.Abs(filepath.Join("..", "..", ".cache", "inspector", "node_modules", ".bin", "mcp-inspector"))
	if err == nil {
		if _, err := os.Stat(local); err == nil {
			return []string{local}
		}
	}
	if npx, err := exec.LookPath("npx"); err == nil {
		// Only what npm's cache holds: a test must not download.
		cmd := []string{npx, "--offline", "--yes", "--package", inspectorPackage, "mcp-inspector"}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if exec.CommandContext(ctx, cmd[0], append(cmd[1:], "--version")...).Run() == nil {
			return cmd
		}
	}
	msg := "the MCP Inspector is not installed; run `npm install --prefix .cache/inspector " + inspectorPackage + "` at the repository root, or set ADAPTBOT_INSPECTOR to its mcp-inspector"
	if required("ADAPTBOT_REQUIRE_INSPECTOR") {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return nil
}

// inspect runs the inspector's CLI against `adaptbot mcp` and decodes its
// JSON answer.
func inspect(t *testing.T, inspector []string, bin string, a *appEnv, args ...string) (map[string]any, int) {
	t.Helper()
	cmdArgs := append([]string(nil), inspector[1:]...)
	cmdArgs = append(cmdArgs, "--cli")
	for _, kv := range a.env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			cmdArgs = append(cmdArgs, "-e", kv)
		}
	}
	cmdArgs = append(cmdArgs, bin, "mcp")
	cmdArgs = append(cmdArgs, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, inspector[0], cmdArgs...)
	cmd.Env = append(os.Environ(), "HOME="+a.dir) // the inspector may keep state in its home
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("inspector: %v\nstderr:\n%s", err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("inspector %s: output is not JSON (%v), exit code %d:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, code, stdout.String(), stderr.String())
	}
	return out, code
}

func TestInspectorCLI(t *testing.T) {
	inspector := inspectorCommand(t)
	bin := adaptbotBinary(t)
	a := newAppEnv(t)

	list, code := inspect(t, inspector, bin, a, "--method", "tools/list")
	if code != 0 {
		t.Fatalf("tools/list exit code %d: %v", code, list)
	}
	var calc map[string]any
	tools, _ := list["tools"].([]any)
	for _, x := range tools {
		if tool, _ := x.(map[string]any); tool["name"] == "calculator" {
			calc = tool
		}
	}
	if calc == nil {
		t.Fatalf("tools/list has no calculator: %v", list)
	}
	schema, _ := calc["inputSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	if schema["type"] != "object" || props["expression"] == nil {
		t.Errorf("calculator's inputSchema = %v", schema)
	}

	res, code := inspect(t, inspector, bin, a, "--method", "tools/call", "--tool-name", "calculator", "--tool-arg", "expression=2+3")
	if code != 0 || inspectorText(t, res) != "2+3 = 5" || res["isError"] == true {
		t.Errorf("tools/call calculator 2+3 = %v (exit code %d)", res, code)
	}

	// A tool with an Output struct: its output schema and hints are
	// listed, and its result comes as structured content too.
	var stats, weather map[string]any
	for _, x := range tools {
		switch tool, _ := x.(map[string]any); tool["name"] {
		case "text_stats":
			stats = tool
		case "weather_forecast":
			weather = tool
		}
	}
	if out, _ := stats["outputSchema"].(map[string]any); out["type"] != "object" {
		t.Errorf("text_stats's outputSchema = %v", stats["outputSchema"])
	}
	if ann, _ := weather["annotations"].(map[string]any); ann["openWorldHint"] != true || ann["readOnlyHint"] != false || weather["title"] != "Weather forecast" {
		t.Errorf("weather_forecast: title %v, annotations %v", weather["title"], weather["annotations"])
	}
	res, code = inspect(t, inspector, bin, a, "--method", "tools/call", "--tool-name", "text_stats", "--tool-arg", "text=The cat sat. The cat ran!")
	if sc, _ := res["structuredContent"].(map[string]any); code != 0 || sc["words"] != float64(6) {
		t.Errorf("tools/call text_stats = %v (exit code %d), want structuredContent with 6 words", res, code)
	}

	res, _ = inspect(t, inspector, bin, a, "--method", "tools/call", "--tool-name", "calculator", "--tool-arg", "expr=2+3")
	if res["isError"] != true || !strings.Contains(inspectorText(t, res), "invalid arguments") {
		t.Errorf("tools/call with a bad argument = %v, want isError with the validation message", res)
	}
}

func inspectorText(t *testing.T, res map[string]any) string {
	t.Helper()
	content, _ := res["content"].([]any)
	var parts []string
	for _, c := range content {
		if m, _ := c.(map[string]any); m["type"] == "text" {
			s, _ := m["text"].(string)
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}
