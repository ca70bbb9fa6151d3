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
	"time"

	"adaptbot"
	"adaptbot/poll"
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
// the owner's saves (a hand edit serves once the owner has accepted it and
// saved), refuses changes, and writes nothing at all, not even where nothing
// existed yet.
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
	poll.Until(t, "the registry to catch up", func() bool { _, ok := ro.Tool("upper"); return ok })
	served, _ := ro.Tool("echo")
	before = snapshotTree(t, f.dir)
	// A hand edit: the reader neither accepts nor serves it on its own, and
	// writes nothing.
	f.write(t, "echo", toolSource("echo", "echoes text, edited."))
	if err := ro.Sync(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * Debounce) // the watcher's turn
	if tool, _ := ro.Tool("echo"); tool.Version != served.Version || tool.Description != served.Description || string(tool.Code) != string(served.Code) {
		t.Errorf("the reader serves a hand edit the owner has not accepted: v%d %q", tool.Version, tool.Description)
	}
	after := snapshotTree(t, f.dir)
	delete(after, filepath.Join(f.tools, "echo", "echo.go")) // the edit itself
	delete(before, filepath.Join(f.tools, "echo", "echo.go"))
	sameTree(t, before, after)
	// The owner accepts it and saves: now the reader serves it, with the
	// owner's version number.
	if err := owner.Sync(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	oe, _ := owner.Entry("echo")
	poll.Until(t, "the registry to catch up", func() bool {
		tool, ok := ro.Tool("echo")
		return ok && tool.Description == "Echoes text, edited." && tool.Version == oe.Version && tool.SHA256 == oe.SHA256
	})
	before = snapshotTree(t, f.dir)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sameTree(t, before, snapshotTree(t, f.dir))

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
	poll.Until(t, "the registry to catch up", func() bool { e, _ := r.Entry("echo"); return e.Category == "text" })
	cancel()
	<-done
	if strings.Join(got, "|") != "updated text" {
		t.Errorf("events = %q, want one update", got)
	}
}

// TestReadOnlyFollowsReview: with review on in the owner, a pending version
// (a new tool, a hand edit) does not serve in a ReadOnly registry, whether
// it follows the owner's saves or opens after them; the previous version
// keeps serving there, and the approved one serves once approved.
func TestReadOnlyFollowsReview(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	owner := f.openReview(t)
	ro, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Put(ctx, "shout", []byte(toolSource("shout", "shouts text.")), PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
		t.Fatal(err)
	}
	f.write(t, "echo", toolSource("echo", "echoes text, edited."))
	if err := owner.Sync(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if e, _ := owner.Entry("echo"); e.Status != Pending || e.Version != 1 || e.PendingVersion != 2 {
		t.Fatalf("owner's echo = %+v, want v1 serving and v2 pending", e)
	}
	// What the watcher does on a change of the source or of the registry file.
	ro.Sync(ctx, "shout")
	ro.Sync(ctx, "echo")
	ro2, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []*Registry{ro, ro2} {
		if tool, ok := r.Tool("shout"); ok {
			t.Errorf("reader %d serves the pending new tool: %+v", i, tool.Entry)
		}
		tool, ok := r.Tool("echo")
		if !ok || tool.Version != 1 || tool.Description != "Echoes text." || tool.SHA256 != adaptbot.Digest([]byte(toolSource("echo", "echoes text."))) {
			t.Errorf("reader %d serves echo %v v%d %q, want v1 as approved", i, ok, tool.Version, tool.Description)
		}
		if e, _ := r.Entry("echo"); e.Status != Pending || e.PendingVersion != 2 {
			t.Errorf("reader %d: echo = %+v, want the owner's pending entry", i, e)
		}
	}

	// Approved by the owner: the reader follows.
	if _, err := owner.Approve(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Approve(ctx, "shout"); err != nil {
		t.Fatal(err)
	}
	ro.Sync(ctx, "echo")
	if tool, ok := ro.Tool("echo"); !ok || tool.Version != 2 || tool.Description != "Echoes text, edited." {
		t.Errorf("after approval the reader serves echo %v v%d %q, want v2", ok, tool.Version, tool.Description)
	}
	if tool, ok := ro.Tool("shout"); !ok || tool.Version != 1 {
		t.Errorf("after approval the reader serves shout %v v%d, want v1", ok, tool.Version)
	}
}
