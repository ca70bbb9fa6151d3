package registry

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// callerSource is a tool that calls each of callees.
func callerSource(name string, callees ...string) string {
	body := ""
	for _, c := range callees {
		body += "\tif _, err := toolkit.Call(ctx, \"" + c + "\", nil); err != nil {\n\t\treturn \"\", err\n\t}\n"
	}
	return "// Package " + name + " calls tools.\npackage " + name + `

import (
	"context"

	"adaptbot/toolkit"
)

// Input is empty.
type Input struct{}

// Execute calls the tools.
func Execute(ctx context.Context, in Input) (string, error) {
` + body + `	return "done", nil
}
`
}

func put(t *testing.T, r *Registry, name, src string) Entry {
	t.Helper()
	e, err := r.Put(context.Background(), name, []byte(src), PutOptions{})
	if err != nil {
		t.Fatalf("Put %s: %v", name, err)
	}
	return e
}

// TestUsesAndUsedBy: the registry says what each tool uses and is used by,
// the trip_time example among them, loaded from a folder where it comes
// before the tools it calls.
func TestUsesAndUsedBy(t *testing.T) {
	f := newFixture(t)
	trip, err := os.ReadFile("../testdata/tools/trip_time/trip_time.go")
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, "trip_time", string(trip))
	f.write(t, "unit_converter", toolSource("unit_converter", "converts."))
	f.write(t, "calculator", toolSource("calculator", "calculates."))
	r := f.open(t, nil)
	put(t, r, "planner", callerSource("planner", "trip_time", "calculator"))

	want := map[string][2][]string{
		"trip_time":      {{"calculator", "unit_converter"}, {"planner"}},
		"unit_converter": {nil, {"trip_time"}},
		"calculator":     {nil, {"planner", "trip_time"}},
		"planner":        {{"calculator", "trip_time"}, nil},
	}
	for _, e := range r.List() {
		w := want[e.Name]
		if !slices.Equal(e.Uses, w[0]) || !slices.Equal(e.UsedBy, w[1]) || e.Status != OK {
			t.Errorf("List: %s uses %q, used by %q, %s; want %q and %q, ok", e.Name, e.Uses, e.UsedBy, e.Status, w[0], w[1])
		}
	}
	if e, _ := r.Entry("calculator"); !slices.Equal(e.UsedBy, []string{"planner", "trip_time"}) {
		t.Errorf("Entry(calculator).UsedBy = %q", e.UsedBy)
	}
	if got := r.Dependents("unit_converter"); !slices.Equal(got, []string{"planner", "trip_time"}) {
		t.Errorf("Dependents(unit_converter) = %q, want trip_time and, through it, planner", got)
	}
	if got := r.Dependents("planner"); len(got) != 0 {
		t.Errorf("Dependents(planner) = %q", got)
	}
	// Derived, never stored: the file keeps its shape.
	data, _ := os.ReadFile(f.path)
	if strings.Contains(string(data), `"uses"`) || strings.Contains(string(data), `"used_by"`) {
		t.Errorf("the registry file stores derived fields:\n%s", data)
	}
	var asJSON map[string]any
	e, _ := r.Entry("trip_time")
	b, _ := json.Marshal(e)
	json.Unmarshal(b, &asJSON)
	if asJSON["uses"] == nil || asJSON["used_by"] == nil {
		t.Errorf("the entry's JSON has no uses or used_by: %s", b)
	}
}

func TestNewVersionsMustCallToolsThatExist(t *testing.T) {
	f := newFixture(t)
	f.write(t, "unit_converter", toolSource("unit_converter", "converts."))
	r, err := Open(context.Background(), Options{ToolsDir: f.tools, Path: f.path,
		Known: func(name string) bool { return name == "files__read" }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Put(context.Background(), "trip", []byte(callerSource("trip", "unit_converter", "unit_convertr")), PutOptions{})
	if err == nil || !strings.Contains(err.Error(), `calls unit_convertr, and there is no tool named "unit_convertr"`) {
		t.Errorf("Put of a tool calling a missing tool = %v", err)
	}
	if _, ok := r.Entry("trip"); ok {
		t.Error("the refused tool is in the registry")
	}
	put(t, r, "reader", callerSource("reader", "files__read", "unit_converter"))

	// A cluster's other replica checked it already; its callee may come next.
	if _, err := r.Put(context.Background(), "early", []byte(callerSource("early", "later")), PutOptions{Replicated: true}); err != nil {
		t.Errorf("a replicated version calling a tool not here yet: %v", err)
	}

	// A hand edit is held to the same rule: the last good version serves.
	f.write(t, "reader", callerSource("reader", "nope"))
	if err := r.Sync(context.Background(), "reader"); err == nil || !strings.Contains(err.Error(), `no tool named "nope"`) {
		t.Errorf("Sync of a hand edit calling a missing tool = %v", err)
	}
	if e, _ := r.Entry("reader"); e.Status != Broken || !strings.Contains(e.LastError, "nope") || e.Version != 1 {
		t.Errorf("reader after the bad edit: %s %q v%d", e.Status, e.LastError, e.Version)
	}

	// A name the gate cannot read is refused too.
	dynamic := strings.Replace(callerSource("dyn", "unit_converter"), `toolkit.Call(ctx, "unit_converter", nil)`, `toolkit.Call(ctx, in.Name(), nil)`, 1)
	dynamic = strings.Replace(dynamic, "type Input struct{}", "type Input struct{}\n\nfunc (Input) Name() string { return \"x\" }", 1)
	if _, err := r.Put(context.Background(), "dyn", []byte(dynamic), PutOptions{}); err == nil || !strings.Contains(err.Error(), "must name its tool with a string literal") {
		t.Errorf("Put of a tool naming its callee at run time = %v", err)
	}
}

func TestCyclesAreRefused(t *testing.T) {
	f := newFixture(t)
	r := f.open(t, nil)
	put(t, r, "c", toolSource("c", "answers."))
	put(t, r, "b", callerSource("b", "c"))
	put(t, r, "a", callerSource("a", "b"))
	_, err := r.Put(context.Background(), "c", []byte(callerSource("c", "a")), PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "calls a, which calls c back (c → a → b → c): a cycle") {
		t.Errorf("a change closing a cycle = %v", err)
	}
	if e, _ := r.Entry("c"); e.Version != 1 || len(e.Uses) != 0 {
		t.Errorf("c after the refused change: v%d uses %q", e.Version, e.Uses)
	}
}

func TestRemoveAToolOthersUse(t *testing.T) {
	f := newFixture(t)
	r := f.open(t, nil)
	put(t, r, "unit_converter", toolSource("unit_converter", "converts."))
	put(t, r, "trip", callerSource("trip", "unit_converter"))
	put(t, r, "planner", callerSource("planner", "trip"))

	_, deps, err := r.Remove(context.Background(), "unit_converter", false)
	var inUse *InUseError
	if !errors.As(err, &inUse) || !errors.Is(err, ErrInUse) || !slices.Equal(inUse.Dependents, []string{"planner", "trip"}) || !slices.Equal(deps, inUse.Dependents) {
		t.Fatalf("Remove of a used tool = %v (%q)", err, deps)
	}
	if !strings.Contains(err.Error(), "unit_converter is used by planner, trip") {
		t.Errorf("the refusal says %q", err)
	}
	if _, ok := r.Tool("unit_converter"); !ok {
		t.Fatal("the refused delete removed the tool")
	}

	e, deps, err := r.Remove(context.Background(), "unit_converter", true)
	if err != nil || e.Name != "unit_converter" || !slices.Equal(deps, []string{"planner", "trip"}) {
		t.Fatalf("forced Remove = %v, %q, %v", e.Name, deps, err)
	}
	trip, _ := r.Entry("trip")
	if trip.Status != Broken || !strings.Contains(trip.LastError, "calls unit_converter, which is not a tool (any more)") {
		t.Errorf("trip after its callee was deleted: %s %q", trip.Status, trip.LastError)
	}
	if _, ok := r.Tool("trip"); !ok {
		t.Error("trip no longer serves; it should, and fail only where it calls the deleted tool")
	}
	// planner calls trip, which serves: planner itself is not marked.
	if planner, _ := r.Entry("planner"); planner.Status != OK {
		t.Errorf("planner: %s %q", planner.Status, planner.LastError)
	}

	// The tool is back: so is trip.
	versions, _ := r.Versions("unit_converter")
	if _, err := r.Rollback(context.Background(), "unit_converter", versions[len(versions)-1].Version); err != nil {
		t.Fatal(err)
	}
	if trip, _ := r.Entry("trip"); trip.Status != OK || trip.LastError != "" {
		t.Errorf("trip after its callee came back: %s %q", trip.Status, trip.LastError)
	}
	// A tool no one uses goes without force.
	if _, deps, err := r.Remove(context.Background(), "planner", false); err != nil || len(deps) != 0 {
		t.Errorf("Remove of an unused tool = %q, %v", deps, err)
	}
}

func TestSetWarning(t *testing.T) {
	f := newFixture(t)
	r := f.open(t, nil)
	put(t, r, "echo", toolSource("echo", "echoes."))
	if err := r.SetWarning("echo", "breaks trip"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetWarning("missing", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetWarning of a missing tool = %v", err)
	}
	again := f.open(t, nil)
	if e, _ := again.Entry("echo"); e.Warning != "breaks trip" {
		t.Errorf("the warning after a restart: %q", e.Warning)
	}
	// A new version clears it: its own checks say anew.
	put(t, r, "echo", toolSource("echo", "echoes twice."))
	if e, _ := r.Entry("echo"); e.Warning != "" {
		t.Errorf("the warning after a new version: %q", e.Warning)
	}
	data, _ := os.ReadFile(filepath.Join(f.dir, "tools_registry.json"))
	if strings.Contains(string(data), "breaks trip") {
		t.Error("the cleared warning is still in the file")
	}
}
