package shipping

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"adaptbot/registry"
	"adaptbot/sandbox"
)

// home is an AdaptBot folder of its own: tools, registry, sandbox.
type home struct {
	dir, tools string
	reg        *registry.Registry
	runner     sandbox.Runner
}

// newHome opens a registry in a temp folder seeded with the named tools
// from ../tools (source and examples), checked in an in-process sandbox.
func newHome(t testing.TB, review bool, names ...string) *home {
	t.Helper()
	dir := t.TempDir()
	h := &home{dir: dir, tools: filepath.Join(dir, "tools")}
	for _, name := range names {
		for _, file := range []string{name + ".go", registry.ExamplesFile} {
			data, err := os.ReadFile(filepath.Join("..", "tools", name, file))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(h.tools, name, file), data)
		}
	}
	h.runner = sandbox.NewInProcess(sandbox.Options{})
	t.Cleanup(func() { h.runner.Close() })
	var err error
	h.reg, err = registry.Open(context.Background(), registry.Options{ToolsDir: h.tools, Path: filepath.Join(dir, "tools_registry.json"), Compiler: h.runner, Review: review})
	if err != nil {
		t.Fatal(err)
	}
	if h.reg.Len() != len(names) {
		t.Fatalf("registry serves %d tools, want %d: %q", h.reg.Len(), len(names), h.reg.Warnings())
	}
	return h
}

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
