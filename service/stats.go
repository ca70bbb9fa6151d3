package service

import (
	"context"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/identity"
)

// Stats are the benchmark aggregates as the service asks them;
// *benchmarks.Store is one.
type Stats interface {
	Query(f benchmarks.Filter) benchmarks.Summary
}

// Benchmarks summarises the rows f selects, from the aggregates (the
// dashboard, GET /api/benchmarks): everyone's requests, so it needs the
// ReadAll permission. Without aggregates it answers an empty summary.
func (s *Service) Benchmarks(ctx context.Context, f adaptbot.Filter) (*adaptbot.Summary, error) {
	_, o, err := s.read(ctx, "benchmarks", identity.ReadAll)
	if err != nil {
		return nil, o.finish(err)
	}
	sum := s.stats().Query(f)
	return &sum, o.finish(nil)
}

// ToolUsage returns each tool's use (local name or "server/tool"), from the
// aggregates: the tools pages never read the CSV.
func (s *Service) ToolUsage(ctx context.Context) (map[string]adaptbot.ToolUse, error) {
	_, o, err := s.read(ctx, "tool usage", identity.ReadTools)
	if err != nil {
		return nil, o.finish(err)
	}
	out := map[string]adaptbot.ToolUse{}
	for _, t := range s.stats().Query(benchmarks.Filter{}).Tools {
		out[t.Tool] = adaptbot.ToolUse{Uses: int(t.Chat.Requests + t.Run.Requests), Errors: int(t.Chat.Failed + t.Run.Failed)}
	}
	return out, o.finish(nil)
}

// stats are the aggregates, or an empty store when there are none yet.
func (s *Service) stats() Stats {
	if s.d.Stats == nil {
		return benchmarks.NewStore()
	}
	return s.d.Stats
}
