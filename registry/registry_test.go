package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"adaptbot"
	"adaptbot/poll"
)

// fakeCompiler is a Compiler whose behaviour each test scripts.
type fakeCompiler struct {
	compile func(tool string, src []byte) error
}

var _ Compiler = (*fakeCompiler)(nil)

func (f *fakeCompiler) Compile(_ context.Context, tool string, src []byte) error {
	if f.compile == nil {
		return nil
	}
	return f.compile(tool, src)
}

func toolSource(name, desc string) string {
	return "// Package " + name + " " + desc + "\npackage " + name + `

import "context"

// Input is empty.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"some text\"`" + `
}

// Execute echoes.
func Execute(ctx context.Context, in Input) (string, error) { return in.Text, nil }
`
}

type fixture struct {
	dir, tools, path string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{dir: dir, tools: filepath.Join(dir, "tools"), path: filepath.Join(dir, "tools_registry.json")}
	os.MkdirAll(f.tools, 0o755)
	return f
}

func (f fixture) write(t *testing.T, name, src string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(f.tools, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.tools, name, name+".go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) open(t *testing.T, c Compiler) *Registry {
	t.Helper()
	r, err := Open(context.Background(), Options{ToolsDir: f.tools, Path: f.path, Compiler: c})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOpenRebuildsMissingRegistry(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	r := f.open(t, nil)
	e, ok := r.Entry("echo")
	if !ok {
		t.Fatal("echo not registered")
	}
	if e.Version != 1 || e.Status != OK || e.Origin != adaptbot.OriginManual || e.Description != "Echoes text." {
		t.Errorf("entry = %+v", e)
	}
	if !strings.Contains(string(e.Parameters), `"text"`) {
		t.Errorf("parameters = %s", e.Parameters)
	}
	if _, err := os.Stat(f.path); err != nil {
		t.Errorf("registry not saved: %v", err)
	}
	if len(r.Warnings()) == 0 {
		t.Error("no warning about the missing registry")
	}
	// Reopening an unchanged tree changes nothing.
	r2 := f.open(t, nil)
	if e2, _ := r2.Entry("echo"); e2.Version != 1 || !e2.UpdatedAt.Equal(e.UpdatedAt) {
		t.Errorf("reopen changed the entry: %+v", e2)
	}
}

func TestCorruptRegistryIsMovedAsideAndLastGoodCopyUsed(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	r := f.open(t, nil)
	// A second save leaves a .bak of the first.
	f.write(t, "upper", toolSource("upper", "shouts."))
	if err := r.Sync(context.Background(), "upper"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.path, []byte(`{"tools": [ {"name": "echo", `), 0o644); err != nil {
		t.Fatal(err)
	}
	r2 := f.open(t, nil)
	matches, _ := filepath.Glob(f.path + ".corrupt-*")
	if len(matches) != 1 {
		t.Fatalf("corrupt copies = %v, want 1", matches)
	}
	kept, _ := os.ReadFile(matches[0])
	if string(kept) != `{"tools": [ {"name": "echo", ` {
		t.Errorf("corrupt file not kept as is: %q", kept)
	}
	if r2.Len() != 2 {
		t.Errorf("tools = %d, want 2", r2.Len())
	}
	warn := strings.Join(r2.Warnings(), "\n")
	if !strings.Contains(warn, "corrupt") {
		t.Errorf("warnings = %q", warn)
	}
}

func TestBrokenEditKeepsLastGoodVersion(t *testing.T) {
	f := newFixture(t)
	f.write(t, "echo", toolSource("echo", "echoes text."))
	comp := &fakeCompiler{}
	r := f.open(t, comp)
	good, _ := r.Tool("echo")

	f.write(t, "echo", "package echo\nfunc broken(")
	err := r.Sync(context.Background(), "echo")
	if err == nil {
		t.Fatal("Sync accepted a broken file")
	}
	tool, ok := r.Tool("echo")
	if !ok || string(tool.Code) != string(good.Code) {
		t.Fatal("the last good version stopped serving")
	}
	if tool.Status != Broken || !strings.Contains(tool.LastError, "does not parse") {
		t.Errorf("entry = %+v", tool.Entry)
	}

	// A compile failure in the sandbox is a failure too.
	comp.compile = func(string, []byte) error { return errors.New("undefined: foo") }
	f.write(t, "echo", toolSource("echo", "echoes text loudly."))
	if err := r.Sync(context.Background(), "echo"); err == nil || !strings.Contains(err.Error(), "undefined: foo") {
		t.Fatalf("Sync err = %v", err)
	}
	// After a restart the broken file is still not served, but the good one is.
	r2 := f.open(t, comp)
	tool, ok = r2.Tool("echo")
	if !ok || string(tool.Code) != string(good.Code) || tool.Status != Broken {
		t.Fatalf("after restart: ok=%v entry=%+v", ok, tool.Entry)
	}
	comp.compile = nil
	if err := r2.Sync(context.Background(), "echo"); err != nil {
		t.Fatal(err)
	}
	if tool, _ := r2.Tool("echo"); tool.Version != 2 || tool.Status != OK {
		t.Errorf("fixed tool entry = %+v", tool.Entry)
	}
}

func TestPutDeleteRollback(t *testing.T) {
	f := newFixture(t)
	r := f.open(t, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var kinds []EventKind
	r.OnChange(func(ev Event) { mu.Lock(); kinds = append(kinds, ev.Kind); mu.Unlock() })

	if _, err := r.Put(ctx, "../evil", []byte("x"), PutOptions{}); err == nil {
		t.Fatal("Put accepted a name that escapes tools/")
	}
	if _, err := r.Put(ctx, "echo", []byte("package echo"), PutOptions{Origin: adaptbot.OriginGenerated}); err == nil {
		t.Fatal("Put accepted a source that breaks the contract")
	}
	if _, err := os.Stat(filepath.Join(f.tools, "echo")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a rejected Put wrote files")
	}
	e1, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes text.")), PutOptions{Origin: adaptbot.OriginGenerated, Category: "text", Examples: []byte(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := r.Put(ctx, "echo", []byte(toolSource("echo", "echoes text twice.")), PutOptions{Origin: adaptbot.OriginGenerated})
	if err != nil {
		t.Fatal(err)
	}
	if e1.Version != 1 || e2.Version != 2 || e2.Category != "text" || e2.Origin != adaptbot.OriginGenerated {
		t.Errorf("versions: %+v %+v", e1, e2)
	}
	vs, err := r.Versions("echo")
	if err != nil || len(vs) != 2 || !vs[1].Current {
		t.Fatalf("versions = %+v, %v", vs, err)
	}
	if _, err := r.Delete(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Entry("echo"); ok {
		t.Fatal("deleted tool still listed")
	}
	if _, err := os.Stat(filepath.Join(f.tools, "echo")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("deleted tool's folder still in tools/")
	}
	if _, err := r.Delete(ctx, "echo"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete err = %v", err)
	}
	e3, err := r.Rollback(ctx, "echo", 1)
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := r.Tool("echo")
	if e3.Version != 3 || tool.Description != "Echoes text." {
		t.Errorf("rollback entry = %+v", e3)
	}
	if got := string(r.Examples("echo")); got != "[]" {
		t.Errorf("examples after rollback = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []EventKind{Added, Updated, Removed, Added}
	if strings.Join(asStrings(kinds), ",") != strings.Join(asStrings(want), ",") {
		t.Errorf("events = %v, want %v", kinds, want)
	}
}

func asStrings(ks []EventKind) []string {
	var out []string
	for _, k := range ks {
		out = append(out, string(k))
	}
	return out
}

func TestWatchPicksUpDroppedAndEditedTools(t *testing.T) {
	f := newFixture(t)
	r := f.open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, ready) }()
	<-ready

	f.write(t, "echo", toolSource("echo", "echoes text."))
	poll.Until(t, "the registry to catch up", func() bool { _, ok := r.Tool("echo"); return ok })
	f.write(t, "echo", toolSource("echo", "echoes text, edited."))
	poll.Until(t, "the registry to catch up", func() bool { e, _ := r.Entry("echo"); return e.Version == 2 })
	f.write(t, "echo", "package echo\n\nfunc (")
	poll.Until(t, "the registry to catch up", func() bool { e, _ := r.Entry("echo"); return e.Status == Broken })
	if tool, ok := r.Tool("echo"); !ok || tool.Description != "Echoes text, edited." {
		t.Errorf("serving after broken edit: %+v", tool.Entry)
	}
	os.RemoveAll(filepath.Join(f.tools, "echo"))
	poll.Until(t, "the registry to catch up", func() bool { _, ok := r.Entry("echo"); return !ok })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
