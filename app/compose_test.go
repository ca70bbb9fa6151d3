package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExternalTool(t *testing.T) {
	known := externalTool(func() []string { return []string{"files", "my__srv"} })
	for name, want := range map[string]bool{
		"files__read": true, "files/read": true, "my__srv__get": true,
		"files__": false, "files": false, "filesx__read": false, "other__read": false, "calculator": false,
	} {
		if got := known(name); got != want {
			t.Errorf("externalTool(%q) = %v, want %v", name, got, want)
		}
	}
	if externalTool(func() []string { return nil })("files__read") {
		t.Error("a tool is known without servers")
	}
}

// TestToolsTestOfAToolThatCallsTools: `adaptbot tools test` runs the
// examples of trip_time (testdata/tools) with the tools it calls.
func TestToolsTestOfAToolThatCallsTools(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"../tools/unit_converter", "../tools/calculator", "../testdata/tools/trip_time"} {
		name := filepath.Base(tool)
		for _, file := range []string{name + ".go", "examples.json"} {
			b, err := os.ReadFile(filepath.Join(tool, file))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "tools", name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tools", name, file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := runEnv(t, cliEnv(dir, closedAddr(t)), strings.NewReader(""), "tools", "test", "trip_time")
	if err != nil || !strings.Contains(out, "2 of 2 examples pass") {
		t.Errorf("tools test trip_time = %v\n%s", err, out)
	}
}
