package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWithPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "users.json")
	for _, data := range []string{"old", "new"} {
		if err := Write(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	info, _ := os.Stat(path)
	if err != nil || string(b) != "new" || info.Mode().Perm() != 0o600 {
		t.Fatalf("read %q, %v, mode %v", b, err, info.Mode())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestRemoveStaleKeepsEverythingElse(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{ // path: removed
		".tmp-tools_registry.json-1": true,
		"calc/.tmp-calc.go-2":        true,
		"calc/calc.go":               false,
		"tools_registry.json":        false,
		"a/b/.tmp-deep-3":            false, // only one level down
	}
	for name := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	RemoveStale(dir)
	for name, removed := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
}
