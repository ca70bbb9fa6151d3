package generator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/poll"
	"adaptbot/registry"
)

// The tests of composition: trip_time (testdata/tools/trip_time) calls
// unit_converter and calculator.

func repoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unitExamples are unit_converter's examples in these tests: they hold
// whatever the output's wording, so a change of wording passes them.
const unitExamples = `[{"input": {"value": 5, "from": "km", "to": "miles"}, "contains": "3.10685"}]`

// reworded is unit_converter saying "is" where trip_time reads " = ".
func reworded(t *testing.T) string {
	return strings.Replace(repoFile(t, "tools/unit_converter/unit_converter.go"),
		`describe(in.Value, from) + " = " + describe(result, to)`, `describe(in.Value, from) + " is " + describe(result, to)`, 1)
}

// withTrip registers unit_converter, calculator and trip_time, with their
// examples.
func (f *fixture) withTrip(t *testing.T) {
	t.Helper()
	for _, tool := range []struct{ name, src, examples string }{
		{"unit_converter", repoFile(t, "tools/unit_converter/unit_converter.go"), unitExamples},
		{"calculator", repoFile(t, "tools/calculator/calculator.go"), repoFile(t, "tools/calculator/examples.json")},
		{"trip_time", repoFile(t, "testdata/tools/trip_time/trip_time.go"), repoFile(t, "testdata/tools/trip_time/examples.json")},
	} {
		if _, err := f.reg.Put(t.Context(), tool.name, []byte(tool.src), registry.PutOptions{Origin: adaptbot.OriginBuiltin, Examples: []byte(tool.examples), Approved: true}); err != nil {
			t.Fatalf("%s: %v", tool.name, err)
		}
	}
}

// finderFunc is a Finder made of a function.
type finderFunc func(query string, k int) []string

func (f finderFunc) Find(_ context.Context, query string, k int) []string { return f(query, k) }

func TestCreateCallsTools(t *testing.T) {
	trip := repoFile(t, "testdata/tools/trip_time/trip_time.go")
	model, sc := scripted(t,
		// First: a typo in a callee's name, which the gate refuses by name.
		writeReply(strings.Replace(trip, `"unit_converter"`, `"unit_convertr"`, 1), "travel",
			`{"input": {"miles": 100, "speed_kmh": 80}, "contains": "2.01168 hours"}`, `{"input": {"miles": 10, "speed_kmh": 16.09344}, "contains": "(1 h 0 min)"}`),
		writeReply(trip, "travel",
			`{"input": {"miles": 100, "speed_kmh": 80}, "contains": "2.01168 hours"}`, `{"input": {"miles": 10, "speed_kmh": 16.09344}, "contains": "(1 h 0 min)"}`))
	var asked []string
	f := newFixture(t, model, func(o *Options, _ *registry.Options) {
		o.Finder = finderFunc(func(query string, k int) []string {
			asked = append(asked, query)
			return []string{"unit_converter", "trip_time", "calculator", "gone"}
		})
	})
	f.withTrip(t)
	if _, err := f.reg.Delete(t.Context(), "trip_time"); err != nil {
		t.Fatal(err)
	}
	res, err := f.gen.Build(t.Context(), Request{Op: Create, Tool: "trip_time", Summary: "Tell how long a trip of some miles takes at a speed in km/h.", Text: "how long is 100 miles at 80 km/h"}, nil)
	if err != nil || !res.OK || res.Attempts != 2 {
		t.Fatalf("build = %+v, %v", res, err)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "100 miles at 80 km/h") {
		t.Errorf("the finder was asked %q", asked)
	}
	task := sc.lastUser(0)
	for _, want := range []string{"Tools you may call with toolkit.Call", "- unit_converter: Converts a value between units", `"speed"`, "- calculator: "} {
		if want == `"speed"` {
			want = `Arguments: {"type":"object"`
		}
		if !strings.Contains(task, want) {
			t.Errorf("the write task does not show %q:\n%s", want, task)
		}
	}
	if strings.Contains(task, "- trip_time:") || strings.Contains(task, "- gone:") {
		t.Errorf("the write task offers the tool itself or a tool that does not exist:\n%s", task)
	}
	if got := res.Log[0].Errors; len(got) != 1 || !strings.Contains(got[0], `calls unit_convertr, and there is no tool named "unit_convertr"`) {
		t.Errorf("attempt 1's problems = %q", got)
	}
	if !strings.Contains(sc.lastUser(1), `no tool named "unit_convertr"`) {
		t.Error("the repair does not say which tool does not exist")
	}
	e, _ := f.reg.Entry("trip_time")
	if !slices.Equal(e.Uses, []string{"calculator", "unit_converter"}) {
		t.Errorf("trip_time uses %q", e.Uses)
	}
}

// TestModifyThatBreaksATool: a change to unit_converter that trip_time's
// examples fail does not serve, and says so by name; with review on it
// waits, with the report.
func TestModifyThatBreaksATool(t *testing.T) {
	for _, review := range []bool{false, true} {
		t.Run(map[bool]string{false: "serving", true: "review"}[review], func(t *testing.T) {
			replies := []llm.Response{}
			for range 3 {
				replies = append(replies, writeReply(reworded(t), "conversion", `{"input": {"value": 1, "from": "km", "to": "m"}, "contains": "1000"}`, unitExamples[1:len(unitExamples)-1]))
			}
			model, sc := scripted(t, replies...)
			f := newFixture(t, model, func(_ *Options, r *registry.Options) { r.Review = review })
			f.withTrip(t)
			var stages stages
			res, err := f.gen.Build(t.Context(), Request{Op: Modify, Tool: "unit_converter", Summary: "Say is instead of =.", Text: "reword"}, stages.add)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(stages.list(), StageDependents) {
				t.Errorf("stages %q: the dependents' examples did not run", stages.list())
			}
			if len(res.Dependents) != 1 || res.Dependents[0].Tool != "trip_time" || res.Dependents[0].OK {
				t.Fatalf("Result.Dependents = %+v", res.Dependents)
			}
			if got := res.Dependents[0].Failures()[0]; !strings.Contains(got, `unit_converter said "100 miles (mi) is 160.9344 kilometers (km)"`) {
				t.Errorf("trip_time's failure = %q", got)
			}
			uc, _ := f.reg.Entry("unit_converter")
			if !review {
				if res.OK || res.Attempts != 3 || !strings.Contains(res.Error, "still breaks the tools that use it: trip_time (") || !strings.Contains(res.Error, "version 1 keeps serving") {
					t.Errorf("result = OK %v after %d attempts: %q", res.OK, res.Attempts, res.Error)
				}
				if !strings.Contains(sc.lastUser(1), "the change breaks trip_time, a tool that calls unit_converter") {
					t.Error("the repair does not say the change breaks trip_time")
				}
				if uc.Version != 1 || uc.Status != registry.OK {
					t.Errorf("unit_converter after the refused change: v%d %s", uc.Version, uc.Status)
				}
			} else {
				if !res.OK || !res.Pending || res.Attempts != 1 || !strings.Contains(res.Summary, "breaks the tools that use it: trip_time") {
					t.Errorf("result = %+v", res)
				}
				if uc.Status != registry.Pending || uc.Version != 1 || !strings.Contains(uc.Warning, "(waiting for approval) breaks the tools that use it: trip_time") {
					t.Errorf("unit_converter after the held change: %s v%d, warning %q", uc.Status, uc.Version, uc.Warning)
				}
			}
			// Either way, trip_time still works with what serves.
			tool, _ := f.box.Tool("trip_time")
			if out, err := tool.Call(t.Context(), json.RawMessage(`{"miles": 100, "speed_kmh": 80}`)); err != nil || !strings.Contains(out, "2.01168 hours") {
				t.Errorf("trip_time after the change = %q, %v", out, err)
			}
		})
	}
}

func TestRollbackThatBreaksATool(t *testing.T) {
	for _, review := range []bool{false, true} {
		t.Run(map[bool]string{false: "serving", true: "review"}[review], func(t *testing.T) {
			f := newFixture(t, nil, func(_ *Options, r *registry.Options) { r.Review = review })
			f.withTrip(t)
			// v2 rewords (a hand edit: nothing checks trip_time before it
			// serves), v3 is the good one again.
			for _, src := range []string{reworded(t), repoFile(t, "tools/unit_converter/unit_converter.go")} {
				if _, err := f.reg.Put(t.Context(), "unit_converter", []byte(src), registry.PutOptions{Approved: true}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := f.gen.Rollback(t.Context(), "unit_converter", 2)
			if err != nil {
				t.Fatal(err)
			}
			uc, _ := f.reg.Entry("unit_converter")
			if !review {
				if res.OK || !strings.Contains(res.Error, "Rolling unit_converter back to version 2 would break the tools that use it: trip_time (") || !strings.Contains(res.Error, "version 3 keeps serving") {
					t.Errorf("rollback = %+v", res)
				}
				if uc.Version != 3 {
					t.Errorf("unit_converter serves v%d", uc.Version)
				}
			} else if !res.OK || !res.Pending || uc.Status != registry.Pending || uc.Version != 3 || !strings.Contains(uc.Warning, "breaks the tools that use it: trip_time") {
				t.Errorf("rollback = %+v; entry %s v%d %q", res, uc.Status, uc.Version, uc.Warning)
			}
			if review {
				// Approve drops the pending one; roll back to a good one.
				if _, err := f.reg.Approve(t.Context(), "unit_converter"); err != nil {
					t.Fatal(err)
				}
			}
			res, err = f.gen.Rollback(t.Context(), "unit_converter", 1)
			if err != nil || !res.OK || res.Pending || len(res.Dependents) != 1 || !res.Dependents[0].OK {
				t.Errorf("a rollback that breaks nothing = %+v, %v", res, err)
			}
			if _, err := f.gen.Rollback(t.Context(), "unit_converter", 99); !errors.Is(err, registry.ErrNotFound) {
				t.Errorf("a rollback to a missing version = %v", err)
			}
		})
	}
}

// TestHandEditOfAUsedTool: a hand edit serves (it is a person's), and its
// check shows as a warning on both tools until a later change passes.
func TestHandEditOfAUsedTool(t *testing.T) {
	f := newFixture(t, nil)
	f.withTrip(t)
	var mu sync.Mutex
	var reports []string
	ctx, stop := context.WithCancel(t.Context())
	wait := f.gen.RetestOnChange(ctx, func(r *ExampleReport, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			reports = append(reports, "error "+err.Error())
			return
		}
		reports = append(reports, r.Tool)
	})
	if _, err := f.reg.Put(t.Context(), "unit_converter", []byte(reworded(t)), registry.PutOptions{Origin: adaptbot.OriginManual}); err != nil {
		t.Fatal(err)
	}
	warnings := func() (string, string) {
		uc, _ := f.reg.Entry("unit_converter")
		trip, _ := f.reg.Entry("trip_time")
		return uc.Warning, trip.Warning
	}
	poll.Until(t, "the warnings", func() bool { a, b := warnings(); return a != "" && b != "" })
	uc, trip := warnings()
	if !strings.HasPrefix(uc, "version 2 breaks the tools that use it: trip_time (") {
		t.Errorf("unit_converter's warning = %q", uc)
	}
	if !strings.HasPrefix(trip, "fails its examples since unit_converter changed (version 2): example 1 of 2") {
		t.Errorf("trip_time's warning = %q", trip)
	}
	mu.Lock()
	if !slices.Contains(reports, "trip_time") || !slices.Contains(reports, "unit_converter") {
		t.Errorf("reports = %q", reports)
	}
	mu.Unlock()

	// The fix clears both.
	if _, err := f.reg.Put(t.Context(), "unit_converter", []byte(repoFile(t, "tools/unit_converter/unit_converter.go")), registry.PutOptions{Origin: adaptbot.OriginManual}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the warnings to clear", func() bool { a, b := warnings(); return a == "" && b == "" })
	stop()
	wait() // the last run may still be saving
}

func TestDeleteAUsedTool(t *testing.T) {
	f := newFixture(t, nil)
	f.withTrip(t)
	res, err := f.gen.Build(t.Context(), Request{Op: Delete, Tool: "unit_converter"}, nil)
	var inUse *registry.InUseError
	if !errors.As(err, &inUse) || !slices.Equal(inUse.Dependents, []string{"trip_time"}) {
		t.Fatalf("delete of a used tool = %v", err)
	}
	if res.OK || !strings.Contains(res.Error, "unit_converter is not deleted: trip_time use it") {
		t.Errorf("result = %+v", res)
	}
	if _, ok := f.reg.Tool("unit_converter"); !ok {
		t.Fatal("the refused delete removed it")
	}
	res, err = f.gen.Build(t.Context(), Request{Op: Delete, Tool: "unit_converter", Force: true}, nil)
	if err != nil || !res.OK {
		t.Fatalf("forced delete = %+v, %v", res, err)
	}
	if trip, _ := f.reg.Entry("trip_time"); trip.Status != registry.Broken || !strings.Contains(trip.LastError, "calls unit_converter") {
		t.Errorf("trip_time after the forced delete: %s %q", trip.Status, trip.LastError)
	}
}
