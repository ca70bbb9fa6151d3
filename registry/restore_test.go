package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"adaptbot"
)

// TestMissingRegistryRestoredFromBak deletes the registry file and checks
// that Open brings back what it said, not a rebuild that forgets it: origins,
// created_at and version numbers survive, including the tool that the last
// save (not in .bak) changed, and a tool dropped in by hand meanwhile is
// added as manual.
func TestMissingRegistryRestoredFromBak(t *testing.T) {
	f := newFixture(t)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	ctx := context.Background()
	r, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes text.")), PutOptions{Origin: adaptbot.OriginGenerated, Category: "text"}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	if _, err := r.Put(ctx, "upper", []byte(toolSource("upper", "shouts.")), PutOptions{Origin: adaptbot.OriginBuiltin}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	// The last save: echo v2. The .bak still says echo v1.
	if _, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes text twice.")), PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
		t.Fatal(err)
	}
	before := r.List()
	if _, err := os.Stat(f.path + ".bak"); err != nil {
		t.Fatalf("no .bak: %v", err)
	}
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
	f.write(t, "dropped", toolSource("dropped", "came in by hand."))

	clock = clock.Add(time.Hour)
	r2, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := r2.List()
	if len(got) != 3 {
		t.Fatalf("entries = %+v, want echo, dropped, upper", got)
	}
	for _, want := range before {
		e, ok := r2.Entry(want.Name)
		if !ok {
			t.Fatalf("%s lost", want.Name)
		}
		if e.Origin != want.Origin || e.Version != want.Version || !e.CreatedAt.Equal(want.CreatedAt) || e.SHA256 != want.SHA256 || e.Status != OK {
			t.Errorf("%s restored as %+v, want %+v", want.Name, e, want)
		}
	}
	if e, _ := r2.Entry("echo"); e.Version != 2 || e.Description != "Echoes text twice." || e.Category != "text" {
		t.Errorf("echo = %+v, want v2 as the last save left it", e)
	}
	if e, _ := r2.Entry("dropped"); e.Origin != adaptbot.OriginManual || e.Version != 1 || !e.CreatedAt.Equal(clock) {
		t.Errorf("dropped = %+v, want a new manual tool", e)
	}
	if _, ok := r2.Tool("upper"); !ok {
		t.Error("upper does not serve")
	}
	if w := strings.Join(r2.Warnings(), "\n"); !strings.Contains(w, "restored the last good copy") {
		t.Errorf("warnings = %q", w)
	}
	if _, err := os.Stat(f.path); err != nil {
		t.Errorf("registry not saved again: %v", err)
	}
}

// TestMissingRegistryWithoutBakIsRebuilt: with no copy at all, tools come
// back from the folder, with their history's entries where the source
// matches.
func TestMissingRegistryWithoutBakIsRebuilt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.open(t, nil)
	if _, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes text.")), PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
		t.Fatal(err)
	}
	os.Remove(f.path)
	os.Remove(f.path + ".bak")
	f.write(t, "upper", toolSource("upper", "shouts."))
	r2 := f.open(t, nil)
	if e, _ := r2.Entry("echo"); e.Origin != adaptbot.OriginGenerated || e.Version != 1 {
		t.Errorf("echo = %+v, want generated v1 from history", e)
	}
	if e, _ := r2.Entry("upper"); e.Origin != adaptbot.OriginManual || e.Version != 1 {
		t.Errorf("upper = %+v, want manual v1", e)
	}
}

// TestBadBakIsNotUsed: a .bak that does not parse is reported and the
// registry is rebuilt from the folder.
func TestBadBakIsNotUsed(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	if err := os.WriteFile(f.path+".bak", []byte(`{"tools": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.open(t, nil)
	if e, ok := r.Entry("echo"); !ok || e.Origin != adaptbot.OriginManual {
		t.Errorf("echo = %+v, %v", e, ok)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, ".bak is not a good copy") {
		t.Errorf("warnings = %q", w)
	}
}

func TestHistoryIsPruned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path, HistoryKeep: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := r.Put(ctx, "echo", []byte(toolSource("echo", fmt.Sprintf("echoes text %d.", i))), PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := r.Versions("echo")
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, v := range vs {
		nums = append(nums, v.Version)
	}
	if !slices.Equal(nums, []int{4, 5, 6}) || !vs[2].Current {
		t.Errorf("versions = %+v, want 4, 5, 6 with 6 serving", vs)
	}
	if _, err := r.Rollback(ctx, "echo", 2); err == nil {
		t.Error("rolled back to a pruned version")
	}
	if e, err := r.Rollback(ctx, "echo", 4); err != nil || e.Version != 7 {
		t.Errorf("Rollback(4) = %+v, %v", e, err)
	}
	entries, _ := os.ReadDir(filepath.Join(f.tools, ".history", "echo"))
	if len(entries) != 3 {
		t.Errorf("history holds %d folders, want 3", len(entries))
	}

	// The default keeps 20.
	r2 := f.open(t, nil)
	if r2.opts.HistoryKeep != DefaultHistoryKeep {
		t.Errorf("default HistoryKeep = %d", r2.opts.HistoryKeep)
	}
}

// TestRestoreKeepsPendingVersionsPending: with review on, a registry
// restored from .bak and history serves no version that was never approved:
// a held modification leaves the previous version serving and a held new
// tool serves nothing, whether the .bak records the hold or only history
// does (the last save, which the .bak misses). An approval is kept.
func TestRestoreKeepsPendingVersionsPending(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	v1 := map[string]string{"echo": toolSource("echo", "echoes text."), "upper": toolSource("upper", "shouts.")}
	for name, src := range v1 {
		f.write(t, name, src)
	}
	r := f.openReview(t) // a first start: echo and upper serve as v1
	f.write(t, "echo", toolSource("echo", "echoes text, edited."))
	if err := r.Sync(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shout", "other"} {
		if _, err := r.Put(ctx, name, []byte(toolSource(name, "is new.")), PutOptions{Origin: adaptbot.OriginGenerated}); err != nil {
			t.Fatal(err)
		}
	}
	// The last save, which the .bak misses: a held edit of upper.
	f.write(t, "upper", toolSource("upper", "shouts louder."))
	if err := r.Sync(ctx, "upper"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}

	check := func(r *Registry) {
		t.Helper()
		for _, name := range []string{"echo", "upper"} {
			e, _ := r.Entry(name)
			tool, ok := r.Tool(name)
			if e.Status != Pending || e.PendingVersion != 2 || !ok || tool.Version != 1 || tool.SHA256 != adaptbot.Digest([]byte(v1[name])) {
				t.Errorf("%s = %+v, serving %v v%d; want v1 serving and v2 pending", name, e, ok, tool.Version)
			}
		}
		for _, name := range []string{"shout", "other"} {
			e, _ := r.Entry(name)
			if _, ok := r.Tool(name); ok || e.Status != Pending || e.PendingVersion != 1 || e.Version != 0 {
				t.Errorf("%s = %+v, serving %v; want nothing serving and v1 pending", name, e, ok)
			}
		}
	}
	r2 := f.openReview(t)
	if w := strings.Join(r2.Warnings(), "\n"); !strings.Contains(w, "restored the last good copy") {
		t.Errorf("warnings = %q", w)
	}
	check(r2)
	// A restart after the restore keeps it so.
	check(f.openReview(t))

	// Approved, then lost with its .bak too: rebuilt from history, the
	// approved version serves and the held ones stay held.
	r3 := f.openReview(t)
	if _, err := r3.Approve(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	os.Remove(f.path)
	os.Remove(f.path + ".bak")
	r4 := f.openReview(t)
	if tool, ok := r4.Tool("echo"); !ok || tool.Version != 2 {
		t.Errorf("approved echo after a rebuild: serving %v v%d, want v2", ok, tool.Version)
	}
	if _, ok := r4.Tool("shout"); ok {
		t.Error("after a rebuild the pending new tool serves")
	}
	if e, _ := r4.Entry("upper"); e.Status != Pending || e.PendingVersion != 2 {
		t.Errorf("upper after a rebuild = %+v, want v2 pending", e)
	}
}

// TestPruneKeepsServingAndPendingVersions: with review on and HistoryKeep 2,
// three held edits do not prune the version that serves (nor the pending
// one); a restart and a rollback still serve it.
func TestPruneKeepsServingAndPendingVersions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	first := toolSource("echo", "echoes text.")
	f.write(t, "echo", first)
	opts := Options{ToolsDir: f.tools, Path: f.path, Review: true, HistoryKeep: 2}
	r, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e, err := r.Put(ctx, "echo", []byte(toolSource("echo", fmt.Sprintf("echoes text %d.", i))), PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != Pending || e.Version != 1 || e.PendingVersion != i+2 {
			t.Fatalf("edit %d = %+v, want held with v1 serving", i, e)
		}
	}
	vs, err := r.Versions("echo")
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, v := range vs {
		nums = append(nums, v.Version)
	}
	if !slices.Equal(nums, []int{1, 3, 4}) || !vs[0].Current || !vs[2].Pending {
		t.Errorf("versions = %+v, want 1 (serving), 3, 4 (pending)", vs)
	}

	r2, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := r2.Tool("echo"); !ok || tool.Version != 1 || string(tool.Code) != first {
		t.Fatalf("after a restart echo serves %v v%d, want v1", ok, tool.Version)
	}
	e, err := r2.Rollback(ctx, "echo", 1)
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := r2.Tool("echo"); !ok || e.Status != OK || tool.Version != 5 || string(tool.Code) != first {
		t.Errorf("after Rollback(1) echo = %+v, serving %v v%d; want v1's source as v5", e, ok, tool.Version)
	}
}
