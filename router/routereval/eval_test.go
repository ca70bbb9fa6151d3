package routereval

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/router"
)

var goals = flag.Bool("router.goals", false, "make TestEvalGoals fail unless the issue's goals are met")

// datasetPath is the shared LiveMCPBench data as seen from this package's
// folder: ../shared/datasets/livemcpbench from the repository root (CI has
// a copy of shared/ beside the clone).
var datasetPath = filepath.Join("..", "..", "..", "shared", "datasets", "livemcpbench")

// datasetDir returns datasetPath. Without the data the test is skipped on a
// developer's machine, and fails where ADAPTBOT_REQUIRE_DATASET=1 (CI), so
// the router's evaluation cannot silently stop running there.
func datasetDir(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(datasetPath, "catalog.json")); err != nil {
		if os.Getenv("ADAPTBOT_REQUIRE_DATASET") == "1" {
			t.Fatalf("ADAPTBOT_REQUIRE_DATASET=1 but the LiveMCPBench dataset is not at %s (../shared/datasets/livemcpbench from the repository root): %v", datasetPath, err)
		}
		t.Skipf("LiveMCPBench dataset not found at %s (../shared/datasets/livemcpbench from the repository root): %v", datasetPath, err)
	}
	return datasetPath
}

// TestEvalGoals runs the evaluation on the shared dataset with no model.
//
// The goals are recall@5 ≥ 0.45 and per-step top-3 recall ≥ 0.75. Route
// does not reach them today (see ../README.md), so by default the test logs
// the gap and fails only on a regression below what Route reaches now, or
// if Route stops beating both baselines; run with -router.goals to make the
// goals themselves fail the test.
func TestEvalGoals(t *testing.T) {
	r, err := Evaluate(datasetDir(t), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.WriteText(&b)
	t.Logf("\n%s", b.String())

	route := r.Systems[0]
	checks := []struct {
		metric      string
		got         float64
		goal, floor float64
	}{
		{"recall@5", route.RecallAt5, 0.45, 0.41},
		{"per-step top-3 recall", route.StepRecall, 0.75, 0.69},
	}
	for _, c := range checks {
		switch {
		case c.got < c.floor:
			t.Errorf("%s %s = %.3f, below the %.2f it reached when last measured (a regression)", route.System, c.metric, c.got, c.floor)
		case c.got < c.goal && *goals:
			t.Errorf("%s %s = %.3f, goal ≥ %.2f", route.System, c.metric, c.got, c.goal)
		case c.got < c.goal:
			t.Logf("goal not met: %s %s = %.3f, goal ≥ %.2f (-router.goals makes this fail)", route.System, c.metric, c.got, c.goal)
		}
	}
	for _, base := range r.Systems {
		if !strings.HasPrefix(base.System, "baseline:") {
			continue
		}
		if route.RecallAt5 <= base.RecallAt5 || route.RecallAt10 <= base.RecallAt10 || route.StepRecall <= base.StepRecall {
			t.Errorf("%s does not beat %s: %+v vs %+v", route.System, base.System, route, base)
		}
	}
}

// mini is the toy dataset beside the router's own tests.
var mini = filepath.Join("..", "testdata", "mini")

func TestEvaluateMini(t *testing.T) {
	r, err := Evaluate(mini, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tools != 10 || r.Tasks != 3 || r.Steps != 6 || len(r.Systems) != 5 || len(r.Latency) != 0 {
		t.Errorf("report: %d tools, %d tasks, %d steps, %d systems, %d latency rows", r.Tools, r.Tasks, r.Steps, len(r.Systems), len(r.Latency))
	}
	// "What is 17 times 23?" shares no word with "calculate", so the whole
	// tasks miss one tool in three; every step names its tool.
	if m := r.Systems[0]; m.StepRecall != 1 || m.RecallAt10 < 0.66 {
		t.Errorf("Route on the toy set: %+v, want all steps found", m)
	}
	var out strings.Builder
	r.WriteText(&out)
	for _, want := range []string{"| router fused (Route) |", "| baseline: hierarchical TF-IDF |", "| baseline: BM25 name+description |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Error(err)
	}
}

func TestMeasureLatency(t *testing.T) {
	docs, _, err := LoadDataset(mini)
	if err != nil {
		t.Fatal(err)
	}
	l := MeasureLatency(ScaleDocs(docs, 100), []string{"weather", "write a file"}, 2)
	if l.Tools != 100 || l.Queries != 2 || l.Reps != 2 || l.P50 <= 0 || l.P99 < l.P50 || l.StableP99 <= 0 {
		t.Errorf("MeasureLatency = %+v", l)
	}
	var out strings.Builder
	(&Report{Latency: []Latency{l}}).WriteText(&out)
	if l.Index != "default" || !strings.Contains(out.String(), "| default | 100 | 2 ×2 |") {
		t.Errorf("latency table:\n%s", out.String())
	}
}

func TestScaleDocs(t *testing.T) {
	docs, _, err := LoadDataset(mini)
	if err != nil {
		t.Fatal(err)
	}
	got := ScaleDocs(docs, 25)
	if len(got) != 25 {
		t.Fatalf("len = %d", len(got))
	}
	type key struct{ server, name string }
	seen := map[key]bool{}
	for _, d := range got {
		k := key{d.Server, d.Name}
		if seen[k] {
			t.Errorf("duplicate tool %v", k)
		}
		seen[k] = true
	}
	if got[len(docs)].Server != docs[0].Server+" (replica 1)" || got[len(docs)].Name != docs[0].Name+"_v1" {
		t.Errorf("first replica = %s / %s", got[len(docs)].Server, got[len(docs)].Name)
	}
}

// TestLearnHeldOut measures what learning from use brings on LiveMCPBench,
// with no peeking: the index learns the whole-task requests of half the
// tasks (each taught to its gold tools, as if a user had asked it and those
// tools had run), and is scored on the other half, then the halves swap.
// It prints Route's metrics on each held-out half without and with the
// learning, and holds the average gain over the two halves to what the
// README claims (+0.035 recall@5, +0.018 per step), within a tolerance that
// allows a task's worth either way. Run with -v to see the figures.
func TestLearnHeldOut(t *testing.T) {
	docs, tasks, err := LoadDataset(datasetDir(t))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]router.Doc{}
	for _, d := range docs {
		byName[d.Name] = append(byName[d.Name], d)
	}
	var halves [2][]Task
	for i, tk := range tasks {
		halves[i%2] = append(halves[i%2], tk)
	}
	route := func(ix *router.Index) RouteFunc { return func(q string, k int) []router.Hit { return ix.Route(q, k) } }
	var gain5, gainStep float64
	for h := range 2 {
		train, test := halves[1-h], halves[h]
		ix := router.Build(docs)
		before := Score("", route(ix), test)
		for _, tk := range train {
			for _, g := range tk.Gold {
				for _, d := range byName[g] {
					ix.Learn(d.Server, d.Name, tk.Query)
				}
			}
		}
		after := Score("", route(ix), test)
		t.Logf("held-out half %d (%d tasks, learned from %d): recall@5 %.3f → %.3f, recall@10 %.3f → %.3f, per-step top-3 %.3f → %.3f",
			h, len(test), len(train), before.RecallAt5, after.RecallAt5, before.RecallAt10, after.RecallAt10, before.StepRecall, after.StepRecall)
		gain5 += (after.RecallAt5 - before.RecallAt5) / 2
		gainStep += (after.StepRecall - before.StepRecall) / 2
	}
	// A task holds about 2.7 gold tools, so one task more or less found
	// moves a half's recall by about 1/47 ≈ 0.02.
	const claim5, claimStep, tolerance = 0.035, 0.018, 0.015
	t.Logf("average gain: recall@5 %+.3f (README: %+.3f), per-step %+.3f (README: %+.3f)", gain5, claim5, gainStep, claimStep)
	if gain5 < claim5-tolerance || gain5 > claim5+tolerance {
		t.Errorf("learning adds %+.3f recall@5 on held-out tasks; the README claims %+.3f (±%.3f)", gain5, claim5, tolerance)
	}
	if gainStep < claimStep-tolerance || gainStep > claimStep+tolerance {
		t.Errorf("learning adds %+.3f per-step recall on held-out tasks; the README claims %+.3f (±%.3f)", gainStep, claimStep, tolerance)
	}
}
