package service_test

import (
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/service"
)

// TestStatsAreServiceOperations: the dashboard's summary is everyone's
// requests (admins only), the tools' use counts are for anyone who may read
// the tools, and both come from the aggregates the service is given.
func TestStatsAreServiceOperations(t *testing.T) {
	store := benchmarks.NewStore()
	now := time.Now()
	for _, ok := range []bool{true, true, false} {
		r := benchmarks.Row{Timestamp: now, Intent: adaptbot.IntentRun, Category: "calculator", Tools: []string{"calculator"},
			ToolExecution: benchmarks.TriOf(ok), Latency: time.Millisecond}
		if !ok {
			r.ErrorKind, r.Error = "failed", "boom"
		}
		store.Add(r)
	}
	svc := service.New(service.Deps{Stats: store})
	if _, err := svc.Benchmarks(as(bob), benchmarks.Filter{}); adaptbot.KindOf(err) != adaptbot.Forbidden {
		t.Errorf("a builder read the dashboard: %v", err)
	}
	sum, err := svc.Benchmarks(as(admin), benchmarks.Filter{})
	if err != nil || sum.Requests != 3 {
		t.Errorf("the admin's summary: %d requests, %v", sum.Requests, err)
	}
	use, err := svc.ToolUsage(as(bob))
	if err != nil || use["calculator"] != (adaptbot.ToolUse{Uses: 3, Errors: 1}) {
		t.Errorf("use = %+v, %v", use, err)
	}
	if use, err := service.New(service.Deps{}).ToolUsage(as(bob)); err != nil || len(use) != 0 {
		t.Errorf("without aggregates: %+v, %v", use, err)
	}
}
