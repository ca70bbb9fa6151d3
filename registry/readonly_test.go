package registry

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// snapshotTree returns every file under dir with its content, so a test can
// say that nothing was written.
func snapshotTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[p], _ = os.ReadFile(p)
		}
		return nil
	})
	return files
}

func sameTree(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	var diff []string
	for p, b := range after {
		if old, ok := before[p]; !ok || !bytes.Equal(old, b) {
			diff = append(diff, "written: "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			diff = append(diff, "removed: "+p)
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 {
		t.Errorf("the folder changed:\n  %s", strings.Join(diff, "\n  "))
	}
}

// TestReopenWritesNothing: opening a registry that is up to date with its
// folder (a clean checkout) changes no byte of it.
func TestReopenWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	f.open(t, nil)
	before := snapshotTree(t, f.dir)
	f.open(t, nil)
	sameTree(t, before, snapshotTree(t, f.dir))
}

// TestReadOnlyWritesNothing: a ReadOnly registry serves the tools, follows
// hand edits in memory and the owner's saves, refuses changes, and writes
// nothing at all, not even where nothing existed yet.
func TestReadOnlyWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	owner := f.open(t, nil)
	before := snapshotTree(t, f.dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ro, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ro.Tool("echo"); !ok {
		t.Fatal("echo does not serve")
	}
	if _, err := ro.Put(ctx, "upper", []byte(toolSource("upper", "shouts.")), PutOptions{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Put = %v, want ErrReadOnly", err)
	}
	if _, err := ro.Delete(ctx, "echo"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Delete = %v, want ErrReadOnly", err)
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- ro.Watch(ctx, ready) }()
	<-ready

	// The owner saves a new tool: the reader serves it.
	if _, err := owner.Put(ctx, "upper", []byte(toolSource("upper", "shouts.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, ok := ro.Tool("upper"); return ok })
	before = snapshotTree(t, f.dir)
	// A hand edit: served in memory, nothing written by the reader.
	f.write(t, "echo", toolSource("echo", "echoes text, edited."))
	waitFor(t, func() bool { e, _ := ro.Entry("echo"); return e.Description == "Echoes text, edited." })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	after := snapshotTree(t, f.dir)
	delete(after, filepath.Join(f.tools, "echo", "echo.go")) // the edit itself
	delete(before, filepath.Join(f.tools, "echo", "echo.go"))
	sameTree(t, before, after)

	// A folder with no registry file and no tools folder stays empty.
	empty := t.TempDir()
	r, err := Open(context.Background(), Options{ToolsDir: filepath.Join(empty, "tools"), Path: filepath.Join(empty, "tools_registry.json"), ReadOnly: true})
	if err == nil && r.Len() != 0 {
		t.Errorf("an empty folder serves %d tools", r.Len())
	}
	sameTree(t, map[string][]byte{}, snapshotTree(t, empty))
}

// TestHandEditOfTheRegistryFile: a hand edit of the file's category and
// description is taken, announced, and kept on the next save.
func TestHandEditOfTheRegistryFile(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	r := f.open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	r.OnChange(func(ev Event) { got = append(got, string(ev.Kind)+" "+ev.Entry.Category) })
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, ready) }()
	<-ready
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), `"category": ""`, `"category": "text"`, 1)
	if edited == string(data) {
		t.Fatalf("no empty category to edit in:\n%s", data)
	}
	if err := os.WriteFile(f.path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { e, _ := r.Entry("echo"); return e.Category == "text" })
	cancel()
	<-done
	if strings.Join(got, "|") != "updated text" {
		t.Errorf("events = %q, want one update", got)
	}
}
