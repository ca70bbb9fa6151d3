package router

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var goals = flag.Bool("router.goals", false, "make TestEvalGoals fail unless the issue's goals are met")

// datasetPath is the shared LiveMCPBench data as seen from this package's
// folder: ../shared/datasets/livemcpbench from the repository root.
var datasetPath = filepath.Join("..", "..", "shared", "datasets", "livemcpbench")

// datasetDir returns datasetPath, skipping the test when the data is absent.
func datasetDir(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(datasetPath, "catalog.json")); err != nil {
		t.Skipf("LiveMCPBench dataset not found at %s (../shared/datasets/livemcpbench from the repository root): %v", datasetPath, err)
	}
	return datasetPath
}

// TestEvalGoals runs the evaluation on the shared dataset with no model.
//
// The goals are recall@5 ≥ 0.45 and per-step top-3 recall ≥ 0.75.
// Route does not reach them today (see README.md), so by default the test
// logs the gap and fails only on a regression below what Route reaches now,
// or if Route stops beating both baselines; run with -router.goals to make
// the goals themselves fail the test.
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
