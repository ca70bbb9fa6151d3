package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"adaptbot"
)

func (f fixture) openReview(t *testing.T) *Registry {
	t.Helper()
	r, err := Open(context.Background(), Options{ToolsDir: f.tools, Path: f.path, Review: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReviewHoldsNewAndModifiedTools: with review on, a new tool serves
// nothing until approved, and a modified one keeps serving its previous
// version; approval makes the pending version serve, across a restart too.
func TestReviewHoldsNewAndModifiedTools(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	// A first start trusts the tools already in the folder.
	r := f.openReview(t)
	if e, _ := r.Entry("echo"); e.Status != OK || r.Len() != 1 {
		t.Fatalf("shipped tool at first start = %+v", e)
	}

	// A new tool through Put waits.
	var held []Event
	r.OnChange(func(ev Event) { held = append(held, ev) })
	e, err := r.Put(ctx, "shout", []byte(toolSource("shout", "shouts text.")), PutOptions{Origin: adaptbot.OriginGenerated})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != Pending || e.PendingVersion != 1 || e.Version != 0 {
		t.Fatalf("new tool under review = %+v", e)
	}
	if _, ok := r.Tool("shout"); ok || r.Len() != 1 {
		t.Fatal("a pending new tool serves")
	}
	if len(held) != 1 || held[0].Kind != Held {
		t.Errorf("events = %+v, want one held", held)
	}

	// A hand edit of echo waits; version 1 keeps serving.
	f.write(t, "echo", toolSource("echo", "echoes text, edited."))
	if err := r.Sync(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	e, _ = r.Entry("echo")
	tool, ok := r.Tool("echo")
	if e.Status != Pending || e.PendingVersion != 2 || !ok || tool.Version != 1 || tool.Description != "Echoes text." && tool.Description != "echoes text." {
		t.Fatalf("edited tool under review = %+v (serving %v v%d %q)", e, ok, tool.Version, tool.Description)
	}
	// Syncing again (the watcher, a restart) does not make another version.
	r.Sync(ctx, "echo")
	if e, _ = r.Entry("echo"); e.PendingVersion != 2 {
		t.Fatalf("second sync: pending version %d", e.PendingVersion)
	}
	vs, _ := r.Versions("echo")
	if len(vs) != 2 || !vs[0].Current || !vs[1].Pending {
		t.Errorf("versions = %+v", vs)
	}

	// A restart keeps it pending, with version 1 serving.
	r2 := f.openReview(t)
	if e, _ := r2.Entry("echo"); e.Status != Pending || e.PendingVersion != 2 {
		t.Fatalf("after restart echo = %+v", e)
	}
	if tool, ok := r2.Tool("echo"); !ok || tool.Version != 1 {
		t.Fatal("after restart echo v1 does not serve")
	}
	if _, ok := r2.Tool("shout"); ok {
		t.Fatal("after restart the pending new tool serves")
	}

	// Approve.
	for _, name := range []string{"echo", "shout"} {
		e, err := r2.Approve(ctx, name)
		if err != nil || e.Status != OK || e.PendingVersion != 0 {
			t.Fatalf("Approve(%s) = %+v, %v", name, e, err)
		}
	}
	if tool, ok := r2.Tool("echo"); !ok || tool.Version != 2 {
		t.Errorf("approved echo serves v%d", tool.Version)
	}
	if tool, ok := r2.Tool("shout"); !ok || tool.Version != 1 {
		t.Errorf("approved shout serves %v v%d", ok, tool.Version)
	}
	if _, err := r2.Approve(ctx, "echo"); !errors.Is(err, ErrNotPending) {
		t.Errorf("second approve: %v", err)
	}
	if _, err := r2.Approve(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("approve unknown: %v", err)
	}
	// A rollback is a person's choice: it serves at once.
	if e, err := r2.Rollback(ctx, "echo", 1); err != nil || e.Status != OK || e.Version != 3 {
		t.Errorf("rollback under review = %+v, %v", e, err)
	}
}

// TestReviewEditBackDropsPending: editing the file back to the serving
// source drops the pending version.
func TestReviewEditBackDropsPending(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	orig := toolSource("echo", "echoes text.")
	f.write(t, "echo", orig)
	r := f.openReview(t)
	f.write(t, "echo", toolSource("echo", "echoes more."))
	r.Sync(ctx, "echo")
	f.write(t, "echo", orig)
	r.Sync(ctx, "echo")
	if e, _ := r.Entry("echo"); e.Status != OK || e.PendingVersion != 0 || e.Version != 1 {
		t.Errorf("after editing back = %+v", e)
	}
}

func TestVersionSource(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	r := f.open(t, nil)
	src, err := r.VersionSource("echo", 1)
	if err != nil || string(src) != toolSource("echo", "echoes text.") {
		t.Errorf("VersionSource = %q, %v", src, err)
	}
	if _, err := r.VersionSource("echo", 9); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
}

// TestHoldWithoutReview: a version the server proposes on its own waits for
// approval even with review off, and its note is kept in history with it.
func TestHoldWithoutReview(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	r, err := Open(ctx, Options{ToolsDir: f.tools, Path: f.path})
	if err != nil {
		t.Fatal(err)
	}
	e, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes text, repaired.")), PutOptions{Origin: adaptbot.OriginGenerated, Hold: true, Note: "repair: fixed 2 failure cases"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != Pending || e.PendingVersion != 2 || e.Version != 1 {
		t.Fatalf("held = %+v", e)
	}
	if tool, _ := r.Tool("echo"); tool.Version != 1 {
		t.Errorf("version %d serves, want 1 until approved", tool.Version)
	}
	vs, err := r.Versions("echo")
	if err != nil || len(vs) != 2 || vs[1].Note != "repair: fixed 2 failure cases" || !vs[1].Pending || vs[0].Note != "" {
		t.Fatalf("versions = %+v, %v", vs, err)
	}
	if e, err = r.Approve(ctx, "echo"); err != nil || e.Version != 2 {
		t.Fatalf("approve = %+v, %v", e, err)
	}
	// Approved overrides review, never a hold.
	if e, _ = r.Put(ctx, "echo", []byte(toolSource("echo", "echoes again.")), PutOptions{Hold: true, Approved: true}); e.Status != Pending {
		t.Errorf("hold and approved = %+v", e)
	}
}

// A version serves with its note: a reader that sees the new version (a
// replica's mirror, the tool page) finds what its maker said of it.
func TestAVersionServesWithItsNote(t *testing.T) {
	f := newFixture(t)
	r := f.open(t, nil)
	ctx := context.Background()
	const versions = 20
	done := make(chan struct{})
	missing := make(chan string, 1)
	go func() {
		defer close(done)
		seen := ""
		for {
			e, ok := r.Tool("echo")
			if ok && e.SHA256 != seen {
				seen = e.SHA256
				vs, _ := r.Versions("echo")
				for _, v := range vs {
					if v.SHA256 == e.SHA256 && v.Note != fmt.Sprintf("version %d", v.Version) {
						select {
						case missing <- fmt.Sprintf("version %d serves with note %q", v.Version, v.Note):
						default:
						}
					}
				}
				if e.Version == versions {
					return
				}
			}
		}
	}()
	for i := 1; i <= versions; i++ {
		src := toolSource("echo", fmt.Sprintf("echoes text, take %d.", i))
		if _, err := r.Put(ctx, "echo", []byte(src), PutOptions{Origin: adaptbot.OriginGenerated, Note: fmt.Sprintf("version %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	select {
	case m := <-missing:
		t.Error(m)
	default:
	}
}

// TestReviewHoldsANewHost: with review on, a version that adds a host it
// sends to waits like any other change: the serving version keeps its
// hosts until a person approves, and the entry says the hosts of each.
func TestReviewHoldsANewHost(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	withHosts := func(hosts string) string {
		src := toolSource("notify", "notifies.")
		return strings.Replace(src, "type Input struct", "const Hosts = \""+hosts+"\"\n\ntype Input struct", 1)
	}
	f.write(t, "notify", withHosts("hooks.example.org"))
	r := f.openReview(t)
	if e, _ := r.Entry("notify"); e.Status != OK || !slices.Equal(e.Hosts, []string{"hooks.example.org"}) || !slices.Equal(e.Tool.Hosts, e.Hosts) {
		t.Fatalf("at first start: %+v", e)
	}
	e, err := r.Put(ctx, "notify", []byte(withHosts("hooks.example.org, exfil.example.net")), PutOptions{Origin: adaptbot.OriginGenerated})
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := r.Tool("notify")
	if e.Status != Pending || !slices.Equal(tool.Hosts, []string{"hooks.example.org"}) {
		t.Fatalf("a version adding a host: status %s, serving hosts %v", e.Status, tool.Hosts)
	}
	if _, err := r.Approve(ctx, "notify"); err != nil {
		t.Fatal(err)
	}
	if tool, _ := r.Tool("notify"); !slices.Equal(tool.Hosts, []string{"hooks.example.org", "exfil.example.net"}) {
		t.Errorf("approved: hosts %v", tool.Hosts)
	}
}
