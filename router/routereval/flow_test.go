package routereval

import (
	"context"
	"strings"
	"testing"
)

// TestCompareFlows runs the comparison and holds AdaptBot to its
// goals: a one-tool answer in 2 round trips at 5, 100 and 527 tools, at most
// 1,000 tokens a prompt cache cannot serve at 5 tools and 1,500 at 527. The
// peer (its own module, run with go run) is measured beside it and must
// answer too.
func TestCompareFlows(t *testing.T) {
	dir := datasetDir(t)
	docs, _, err := LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{5, 100, 527}
	ours, err := AdaptBotFlows(context.Background(), docs, sizes)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := PeerFlows(context.Background(), PeerDir, dir, sizes)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteFlows(&b, ours, peer)
	t.Logf("\n%s", b.String())
	// Direct answers (issue 31) took 5 tools from 859 to 1,021 tokens: every
	// local tool's schema carries the output_is_answer flag. The budget is
	// back at 1,000 (issue 38): the flag's schema has no description, and
	// the system prompt and the agent's own functions say the same in
	// fewer words (1,021 → 840).
	limit := map[int]int{5: 1000, 100: 1500, 527: 1500}
	for _, r := range append(ours, peer...) {
		if !strings.Contains(r.Answer, "395") {
			t.Errorf("%s at %d tools answered %q", r.System, r.Tools, r.Answer)
		}
	}
	for _, r := range ours {
		if r.RoundTrips != 2 {
			t.Errorf("AdaptBot at %d tools: %d round trips, want 2", r.Tools, r.RoundTrips)
		}
		if r.Uncached > limit[r.Tools] {
			t.Errorf("AdaptBot at %d tools: %d tokens a cache cannot serve, goal ≤ %d", r.Tools, r.Uncached, limit[r.Tools])
		}
	}
}
