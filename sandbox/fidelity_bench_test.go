package sandbox_test

import (
	"testing"
	"time"

	"adaptbot/sandbox"
)

// BenchmarkFidelity times one pass over the fidelity corpus (the 164
// HumanEval-X tasks, every assert of each test), in ns/corpus: interpreted,
// in process with every tool's interpreter already loaded (so the figure
// is the interpreter's, not loading's or the pipe's), and natively, built
// from the same sources (the program times its own rounds, so starting it
// is not counted).
func BenchmarkFidelity(b *testing.B) {
	tools := loadCorpus(b)
	b.Run("interpreted", func(b *testing.B) {
		opts := testOptions(b)
		opts.CallTimeout = time.Minute
		r := sandbox.NewInProcess(opts)
		defer r.Close()
		for _, tool := range tools {
			if res := runCorpusTool(r, tool); res.Err != "" {
				b.Fatalf("%s: %s", tool.Task, res.Err)
			}
		}
		start := time.Now()
		n := 0
		for b.Loop() {
			for _, tool := range tools {
				runCorpusTool(r, tool)
			}
			n++
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/corpus")
	})
	b.Run("native", func(b *testing.B) {
		exe, err := buildNative(b.TempDir(), tools)
		if err == errNoGo {
			b.Skip("the go command is not on PATH")
		}
		if err != nil {
			b.Fatal(err)
		}
		var round time.Duration
		for b.Loop() {
			if _, round, err = runNativeTimed(exe, 5); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(round.Nanoseconds()), "ns/corpus")
	})
}
