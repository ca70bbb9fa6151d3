package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs one command of the binary over dir, as a person would type it.
func runCLI(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	env := map[string]string{
		"ADAPTBOT_TOOLS_DIR":  filepath.Join(dir, "tools"),
		"ADAPTBOT_REGISTRY":   filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_BENCHMARKS": filepath.Join(dir, "benchmarks.csv"),
		"ADAPTBOT_WORKERS":    "1",
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"adaptbot"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	writeTool(t, dir, "echo_tool", strings.Replace(echoTool, "%d", "2", 1))

	// run opens the registry (rebuilding it) and runs a tool in a worker.
	out, err := runCLI(t, dir, "tools", "run", "echo_tool", `{"text": "hi"}`)
	if err != nil || !strings.HasPrefix(out, "hihi\n") {
		t.Fatalf("tools run = %q, %v", out, err)
	}
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"tools", "list"}, "echo_tool", ""},
		{[]string{"tools", "list", "--format", "json"}, `"name": "calculator"`, ""},
		{[]string{"tools", "list", "--format", "xml"}, "", "--format"},
		{[]string{"tools", "list", "--server", "local"}, "calculator", ""},
		{[]string{"tools", "show", "echo_tool"}, "package echo_tool", ""},
		{[]string{"tools", "show", "nope"}, "", "no tool named"},
		{[]string{"tools", "history", "echo_tool"}, "VERSION", ""},
		{[]string{"tools", "run", "calculator", `{"expression": "2^8"}`}, "256", ""},
		{[]string{"tools", "run", "calculator", `{"expression": "1/0"}`}, "", "zero"},
		{[]string{"tools", "test", "calculator"}, "", "no stored examples"},
		{[]string{"tools", "create", "a tool that flips coins"}, "", "OPENAI_API_KEY"},
		{[]string{"tools", "frobnicate"}, "", "unknown subcommand"},
		{[]string{"tools", "rollback", "echo_tool", "x"}, "", "not a version number"},
		{[]string{"route", "--top-k", "2", "evaluate an arithmetic expression"}, "calculator", ""},
		{[]string{"config"}, "ADAPTBOT_TOOL_TIMEOUT", ""},
		{[]string{"help"}, "adaptbot tools", ""},
		{[]string{"frobnicate"}, "", "unknown command"},
	}
	for _, tt := range tests {
		out, err := runCLI(t, dir, tt.args...)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v\n%s", tt.args, err, out)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: err = %v, want %q", tt.args, err, tt.wantErr)
		case !strings.Contains(out, tt.want):
			t.Errorf("%v: output does not contain %q:\n%s", tt.args, tt.want, out)
		}
	}

	out, err = runCLI(t, dir, "report")
	if err != nil || !strings.Contains(out, "RUN 3") {
		t.Errorf("report = %q, %v", out, err)
	}
}
