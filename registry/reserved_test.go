package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/poll"
)

// TestReservedNamesNeverServe: a tool whose name AdaptBot keeps for itself
// is never served, however it arrives: dropped in before the server
// starts, dropped in while it watches, kept in the registry file from
// before the word was reserved, or put through the registry. The one by
// hand stays listed as broken with a warning that says how to rename it,
// its file untouched, and it can be deleted.
func TestReservedNamesNeverServe(t *testing.T) {
	f := newFixture(t)
	f.write(t, "general", toolSource("general", "answers anything."))
	f.write(t, "echo", toolSource("echo", "echoes text."))
	// The registry file of a server from before the word was reserved,
	// which served build_notes.
	old := f.open(t, nil)
	if _, err := old.Put(context.Background(), "notes", []byte(toolSource("notes", "keeps notes.")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f.path)
	os.Rename(filepath.Join(f.tools, "notes"), filepath.Join(f.tools, "build_notes"))
	os.Rename(filepath.Join(f.tools, "build_notes", "notes.go"), filepath.Join(f.tools, "build_notes", "build_notes.go"))
	src := []byte(toolSource("build_notes", "keeps notes."))
	os.WriteFile(filepath.Join(f.tools, "build_notes", "build_notes.go"), src, 0o644)
	var file struct {
		Tools []Entry `json:"tools"`
	}
	json.Unmarshal(data, &file)
	for i := range file.Tools {
		if file.Tools[i].Name == "notes" {
			file.Tools[i].Name, file.Tools[i].SHA256 = "build_notes", adaptbot.Digest(src)
			file.Tools[i].Source = "tools/build_notes/build_notes.go"
		}
	}
	data, _ = json.Marshal(file)
	os.WriteFile(f.path, data, 0o644)

	var logged bytes.Buffer
	r, err := Open(context.Background(), Options{ToolsDir: f.tools, Path: f.path, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string) {
		t.Helper()
		if _, ok := r.Tool(name); ok {
			t.Errorf("%s serves", name)
		}
		for _, tool := range r.Serving() {
			if tool.Name == name {
				t.Errorf("%s is among the serving tools", name)
			}
		}
		e, ok := r.Entry(name)
		if !ok || e.Status != Broken || !strings.Contains(e.LastError, "reserved") || !strings.Contains(e.LastError, "adaptbot tools delete "+name) ||
			!strings.Contains(e.LastError, "tools/"+name+"/"+name+".go to tools/NEW_NAME/NEW_NAME.go") {
			t.Errorf("%s's entry = %+v, %v; want it listed, broken, saying it is reserved and how to rename or delete it", name, e, ok)
		}
		if _, err := os.Stat(r.SourcePath(name)); err != nil {
			t.Errorf("%s's file: %v; it must be left as it is", name, err)
		}
	}
	check("general")
	check("build_notes")
	if _, ok := r.Tool("echo"); !ok || r.Len() != 1 {
		t.Errorf("echo does not serve, or Len = %d, want 1", r.Len())
	}
	for _, want := range []string{`tool general: the name \"general\" is reserved`, "Rename it", "Its file is left as it is"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logged.String())
		}
	}

	// Through the registry: refused, nothing written.
	if _, err := r.Put(context.Background(), "need_tool", []byte(toolSource("need_tool", "needs.")), PutOptions{}); adaptbot.KindOf(err) != adaptbot.Invalid {
		t.Errorf("Put(need_tool) = %v, want the reserved name refused", err)
	}
	if _, err := os.Stat(filepath.Join(f.tools, "need_tool")); !os.IsNotExist(err) {
		t.Errorf("a refused Put made tools/need_tool: %v", err)
	}

	// Dropped in while it watches.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, ready) }()
	<-ready
	f.write(t, "build_more", toolSource("build_more", "builds more."))
	poll.Until(t, "the registry to list build_more", func() bool { _, ok := r.Entry("build_more"); return ok })
	check("build_more")

	// The person deletes it: it goes, its versions kept.
	if _, err := r.Delete(context.Background(), "general"); err != nil {
		t.Fatalf("delete general: %v", err)
	}
	if _, ok := r.Entry("general"); ok {
		t.Error("general is still listed after its delete")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
