package benchmarks_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"adaptbot/benchmarks"
)

func secs(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func TestSummarizeLatency(t *testing.T) {
	tests := []struct {
		name string
		secs []float64
		want benchmarks.Latency
	}{
		{"empty", nil, benchmarks.Latency{}},
		{"one", []float64{2}, benchmarks.Latency{P50: 2, P95: 2, P99: 2, Mean: 2}},
		{"two", []float64{3, 1}, benchmarks.Latency{P50: 2, P95: 2.9, P99: 2.98, Mean: 2}},
		// 1..100 in reverse; numpy.percentile gives 50.5, 95.05, 99.01.
		{"hundred", func() []float64 {
			var s []float64
			for i := 100; i >= 1; i-- {
				s = append(s, float64(i))
			}
			return s
		}(), benchmarks.Latency{P50: 50.5, P95: 95.05, P99: 99.01, Mean: 50.5}},
		{"skewed", []float64{0.1, 0.2, 0.3, 0.4, 10}, benchmarks.Latency{P50: 0.3, P95: 8.08, P99: 9.616, Mean: 2.2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rows []benchmarks.Row
			for _, s := range tt.secs {
				rows = append(rows, benchmarks.Row{Category: "c", Latency: secs(s)})
			}
			got := benchmarks.Summarize(rows).Latency
			if !near(got.P50, tt.want.P50) || !near(got.P95, tt.want.P95) || !near(got.P99, tt.want.P99) || !near(got.Mean, tt.want.Mean) {
				t.Errorf("Latency = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func sampleRows() []benchmarks.Row {
	t0 := time.Date(2026, 1, 30, 10, 0, 0, 0, time.UTC)
	return []benchmarks.Row{
		{Timestamp: t0.Add(2 * time.Hour), Intent: "CHAT", Category: "general", Latency: secs(1), LLMCalls: 2, PromptTokens: 100, CompletionTokens: 10},
		{Timestamp: t0, Intent: "CHAT", Category: "general", Latency: secs(3), LLMCalls: 2, PromptTokens: 100, CompletionTokens: 10},
		{Timestamp: t0.Add(time.Hour), Intent: "CHAT", Category: "weather", ParamExtraction: benchmarks.True, ToolExecution: benchmarks.True, Latency: secs(2), LLMCalls: 3, DiscoveryRequests: 1},
		{Intent: "RUN", Category: "weather", ParamExtraction: benchmarks.False, ToolExecution: benchmarks.False, Latency: secs(4), Error: "timeout\nstack..."},
		{Intent: "CHAT", Category: "need_tool", Latency: secs(0.5), Error: "timeout"},
		{Intent: "BUILD", Category: "build_create", GenerationTime: secs(10), ToolExecution: benchmarks.True, Latency: secs(11), BuildAttempts: 1, LLMCalls: 4},
		{Intent: "BUILD", Category: "build_create", GenerationTime: secs(20), ToolExecution: benchmarks.False, Latency: secs(21), BuildAttempts: 3, Error: "check failed"},
		{Intent: "BUILD", Category: "build_delete", Latency: secs(0.1)},
	}
}

func TestSummarize(t *testing.T) {
	got := benchmarks.Summarize(sampleRows())

	if got.Rows != 8 {
		t.Errorf("Rows = %d, want 8", got.Rows)
	}
	if want := time.Date(2026, 1, 30, 10, 0, 0, 0, time.UTC); !got.First.Equal(want) || !got.Last.Equal(want.Add(2*time.Hour)) {
		t.Errorf("First, Last = %v, %v; want %v and two hours later", got.First, got.Last, want)
	}
	if want := map[string]int{"CHAT": 4, "RUN": 1, "BUILD": 3}; !reflect.DeepEqual(got.ByIntent, want) {
		t.Errorf("ByIntent = %v, want %v", got.ByIntent, want)
	}
	var cats []string
	for _, c := range got.Categories {
		cats = append(cats, c.Category)
	}
	if want := []string{"build_create", "general", "weather", "build_delete", "need_tool"}; !reflect.DeepEqual(cats, want) {
		t.Errorf("categories = %q, want %q (most rows first, then by name)", cats, want)
	}
	if c := got.Categories[1]; c.Count != 2 || c.Errors != 0 || !near(c.Latency.Mean, 2) || !near(c.Latency.P50, 2) {
		t.Errorf("general = %+v, want 2 rows, 0 errors, mean and p50 2s", c)
	}
	if want := (benchmarks.Rate{Success: 1, Total: 2, Rate: 0.5}); got.Extraction != want {
		t.Errorf("Extraction = %+v, want %+v", got.Extraction, want)
	}
	if want := (benchmarks.Rate{Success: 2, Total: 4, Rate: 0.5}); got.Execution != want {
		t.Errorf("Execution = %+v, want %+v", got.Execution, want)
	}
	if want := (benchmarks.BuildReport{Count: 3, Failed: 1, MeanGenerationSec: 15, MeanAttempts: 2}); got.Builds != want {
		t.Errorf("Builds = %+v, want %+v", got.Builds, want)
	}
	if got.Errors != 3 {
		t.Errorf("Errors = %d, want 3", got.Errors)
	}
	if want := []benchmarks.ErrorCount{{Message: "timeout", Count: 2}, {Message: "check failed", Count: 1}}; !reflect.DeepEqual(got.TopErrors, want) {
		t.Errorf("TopErrors = %+v, want %+v", got.TopErrors, want)
	}
	if got.LLMCalls != 11 || got.PromptTokens != 200 || got.CompletionTokens != 20 || got.DiscoveryRequests != 1 {
		t.Errorf("totals = %d calls, %d prompt, %d completion, %d discovery; want 11, 200, 20, 1",
			got.LLMCalls, got.PromptTokens, got.CompletionTokens, got.DiscoveryRequests)
	}
}

func TestReportJSON(t *testing.T) {
	for _, rows := range [][]benchmarks.Row{nil, sampleRows()} {
		b, err := json.Marshal(benchmarks.Summarize(rows))
		if err != nil {
			t.Fatalf("json.Marshal(Report) error = %v", err)
		}
		for _, key := range []string{`"rows":`, `"by_intent":`, `"p95_sec":`, `"parameter_extraction":`, `"top_errors":`} {
			if len(rows) > 0 && !strings.Contains(string(b), key) {
				t.Errorf("JSON %s lacks %s", b, key)
			}
		}
	}
}

func TestReportWriteText(t *testing.T) {
	var b strings.Builder
	if err := benchmarks.Summarize(sampleRows()).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"Benchmarks: 8 rows, 2026-01-30 10:00:00 to 2026-01-30 12:00:00 UTC",
		"Intents: BUILD 3, CHAT 4, RUN 1",
		"CATEGORY",
		"general",
		"Parameter extraction  50.0% (1/2)",
		"Builds                3, 1 failed, mean generation 15.000 s, mean attempts 2.00",
		"       2  timeout",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("WriteText() output lacks %q:\n%s", want, got)
		}
	}

	b.Reset()
	if err := benchmarks.Summarize(nil).WriteText(&b); err != nil || b.String() != "Benchmarks: 0 rows\n" {
		t.Errorf("WriteText() of no rows = %q, %v", b.String(), err)
	}
}

func TestSummarizeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.csv")
	l := open(t, path)
	for _, r := range sampleRows() {
		logRow(t, l, r)
	}
	got := benchmarks.Summarize(mustRead(t, path))
	want := benchmarks.Summarize(sampleRows())
	got.First, got.Last, want.First, want.Last = time.Time{}, time.Time{}, time.Time{}, time.Time{} // Log fills zero timestamps
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report of the logged file =\n%+v\nwant\n%+v", got, want)
	}
}
