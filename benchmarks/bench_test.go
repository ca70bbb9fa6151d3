package benchmarks_test

import (
	"path/filepath"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/benchmarks"
)

// BenchmarkLog measures logging a typical chat row, reported as rows/s.
func BenchmarkLog(b *testing.B) {
	l := open(b, filepath.Join(b.TempDir(), "b.csv"))
	row := benchmarks.Row{
		Timestamp: time.Now(), Query: `what's the weather in "Paris", FR?`, Intent: adaptbot.IntentChat,
		Category: "weather", ParamExtraction: benchmarks.True, ToolExecution: benchmarks.True,
		Latency: 1234 * time.Millisecond, RequestID: "0123456789abcdef", LLMCalls: 2,
		PromptTokens: 812, CompletionTokens: 64, ToolsLoaded: 12,
		NodeTimes: []benchmarks.NodeTime{{Node: "classifier", Duration: 12 * time.Millisecond}, {Node: "execute", Duration: 300 * time.Millisecond}},
	}
	start := time.Now()
	for b.Loop() {
		if err := l.Log(row); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}
