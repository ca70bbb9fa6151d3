package benchmarks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"adaptbot"
)

// writeBenchFile writes n plausible rows, one every 2.5 s (so 1,000,000 rows
// span about 29 days), the way a busy server would have logged them.
func writeBenchFile(b *testing.B, path string, n int) time.Time {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(encode(header))
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	end := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	tools := []string{"weather", "calculator", "unit_converter", "roman_numerals", "currency", "timezone", "wiki", "dictionary"}
	for i := range n {
		r := Row{
			Timestamp: end.Add(-time.Duration(n-i) * 2500 * time.Millisecond),
			Query:     fmt.Sprintf("what is the weather in city number %d today?", i),
			RequestID: fmt.Sprintf("%016x", rng.Uint64()),
			Latency:   time.Duration(math.Exp(rng.Float64()*9)) * time.Millisecond,
		}
		switch x := rng.IntN(20); {
		case x < 13:
			r.Intent, r.LLMCalls, r.PromptTokens, r.CompletionTokens = adaptbot.IntentChat, 2, 800+rng.IntN(400), 40+rng.IntN(100)
			switch y := rng.IntN(10); {
			case y < 3:
				r.Category = adaptbot.CategoryGeneral
			case y < 4:
				r.Category = adaptbot.CategoryNeedTool
			default:
				r.Category = tools[rng.IntN(len(tools))]
				r.Tools = []string{r.Category}
				if y == 9 {
					r.Tools = append(r.Tools, tools[rng.IntN(len(tools))])
				}
				r.ParamExtraction, r.ToolExecution = True, TriOf(rng.IntN(10) > 0)
			}
		case x < 19:
			r.Intent, r.Category = adaptbot.IntentRun, tools[rng.IntN(len(tools))]
			r.ToolExecution = TriOf(rng.IntN(10) > 0)
		default:
			r.Intent, r.Category = adaptbot.IntentBuild, adaptbot.CategoryBuildCreate
			r.BuildAttempts, r.GenerationTime = 1+rng.IntN(3), time.Duration(5+rng.IntN(50))*time.Second
		}
		if rng.IntN(25) == 0 {
			r.Error = []string{"model timed out", "tool failed", "rate limited"}[rng.IntN(3)]
		}
		r.NodeTimes = []NodeTime{{Node: "classifier", Duration: 12 * time.Millisecond}, {Node: "execute", Duration: r.Latency}}
		w.Write(encode(r.cleaned().record()))
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return end
}

// BenchmarkStore measures, at 1k, 100k and 1M rows: building the Store from
// the file at start-up (load, with the heap it keeps after the build), and
// answering /api/benchmarks (query: Query plus JSON encoding, unfiltered and
// with filters).
//
//	go test -run '^$' -bench BenchmarkStore -benchtime 1x ./benchmarks/   (load: one pass)
//	go test -run '^$' -bench 'BenchmarkStore/.*/query' ./benchmarks/
func BenchmarkStore(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "benchmarks.csv")
			end := writeBenchFile(b, path, n)
			s, err := LoadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("load", func(b *testing.B) {
				s = nil
				runtime.GC()
				var before runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for b.Loop() {
					if s, err = LoadFile(path); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MB")
				b.ReportMetric(float64(n)/b.Elapsed().Seconds()*float64(b.N), "rows/s")
				runtime.KeepAlive(s)
			})
			for _, q := range []struct {
				name string
				f    Filter
			}{
				{"query", Filter{}},
				{"query-chat-24h", Filter{Intent: adaptbot.IntentChat, Since: end.Add(-24 * time.Hour)}},
				{"query-tool-1h", Filter{Tool: "weather", Since: end.Add(-time.Hour)}},
				{"query-errors", Filter{Outcome: OutcomeError}},
			} {
				b.Run(q.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						sum := s.Query(q.f)
						if _, err := json.Marshal(sum); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkStoreAdd measures what the Logger's sink adds to each logged row:
// counting it into the Store's cells.
func BenchmarkStoreAdd(b *testing.B) {
	s := NewStore()
	r := Row{
		Timestamp: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), Query: "what's the weather in Paris?", Intent: adaptbot.IntentChat,
		Category: "weather", Tools: []string{"weather"}, ParamExtraction: True, ToolExecution: True,
		Latency: 1234 * time.Millisecond, RequestID: "0123456789abcdef", LLMCalls: 2, PromptTokens: 812, CompletionTokens: 64,
		NodeTimes: []NodeTime{{Node: "classifier", Duration: 12 * time.Millisecond}, {Node: "execute", Duration: 300 * time.Millisecond}},
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Timestamp = r.Timestamp.Add(2500 * time.Millisecond) // a new minute every 24 rows, as a busy server
		s.Add(r)
	}
}
