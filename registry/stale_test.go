package registry

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRemovesStaleTemps: a write killed half-way leaves a
// .tmp-tools_registry.json-* (or one beside a tool's source); the next
// start removes them, and leaves everything else alone.
func TestOpenRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	stale := []string{filepath.Join(dir, ".tmp-tools_registry.json-123"), filepath.Join(tools, "calc", ".tmp-calc.go-456")}
	keep := filepath.Join(dir, "notes.txt")
	for _, p := range append(stale, keep) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(context.Background(), Options{ToolsDir: tools, Path: filepath.Join(dir, "tools_registry.json")})
	if err != nil {
		t.Fatal(err)
	}
	_ = r
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("removed %s: %v", keep, err)
	}
}
