package generator

import (
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/registry"
)

// TestConflictAcrossRegistries is the server and the CLI building the same
// tool: two Generators, each on its own Registry of the same folder, as two
// processes have. The second build is refused at once, as within one
// process; and once the first is done, the other side sees its tool at once
// (no watcher here), so a create of the same name is refused as existing and
// a delete finds it.
func TestConflictAcrossRegistries(t *testing.T) {
	model, entered, release := gatedModel()
	f := newFixture(t, model)
	reg2, err := registry.Open(t.Context(), registry.Options{
		ToolsDir: f.tools, Path: filepath.Join(filepath.Dir(f.tools), "tools_registry.json"), Compiler: f.runner})
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(Options{Model: model, Registry: reg2, Runner: f.runner})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Text: "roman numerals", Op: Create, Tool: "roman_numerals"}
	buildWhileBusy(t, f.gen, other, req, entered, release)

	res, err := other.Build(t.Context(), req, nil)
	if err != nil || res.OK || !strings.Contains(res.Error, "already exists") {
		t.Errorf("create of the name the other side just built = %+v, %v; want refused as existing", res, err)
	}
	res, err = other.Build(t.Context(), Request{Op: Delete, Tool: "roman_numerals"}, nil)
	if err != nil || !res.OK {
		t.Fatalf("delete from the other side = %+v, %v", res, err)
	}
	if err := f.reg.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.reg.Entry("roman_numerals"); ok {
		t.Error("the first side still lists the tool the other deleted")
	}
}
