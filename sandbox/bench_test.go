package sandbox_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"adaptbot/sandbox"
)

// The figures in docs/measurements.md come from:
//
//	go test -run '^$' -bench . -benchtime 2000x ./sandbox/

func benchOptions(b *testing.B) sandbox.Options {
	opts := testOptions(b)
	opts.CallTimeout = 10 * time.Second
	opts.MemoryLimit = sandbox.DefaultMemoryLimit
	opts.MaxGoroutines = sandbox.DefaultMaxGoroutines
	return opts
}

var warmCall = sandbox.Call{Tool: "calculator", Source: []byte(calculator), Input: []byte(`{"a":1,"b":2}`)}

// benchLatency calls r b.N times, one at a time, and reports the median and
// the 99th percentile.
func benchLatency(b *testing.B, r sandbox.Runner) {
	ctx := context.Background()
	if _, err := r.Run(ctx, warmCall); err != nil { // warm up
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := r.Run(ctx, warmCall)
		lat = append(lat, time.Since(start))
		if err != nil || res.Output != `{"sum":3}` {
			b.Fatalf("%q, %v", res.Output, err)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkWarmInProcess is a warm call of a trivial tool in-process.
func BenchmarkWarmInProcess(b *testing.B) {
	r := sandbox.NewInProcess(benchOptions(b))
	defer r.Close()
	benchLatency(b, r)
}

// BenchmarkWarmWorker is the same call through a worker process.
func BenchmarkWarmWorker(b *testing.B) {
	opts := benchOptions(b)
	opts.PoolSize = 1
	benchLatency(b, newPool(b, opts))
}

// BenchmarkColdWorkerStart is the start of a one-worker pool: process
// start, runtime start-up, Landlock where the kernel has it (the worker
// confines itself and starts over) and the seccomp filter, limits, hello.
func BenchmarkColdWorkerStart(b *testing.B) {
	benchColdStart(b, sandbox.LandlockAuto)
}

// BenchmarkColdWorkerStartUnconfined is the same without Landlock or the
// filter: the difference is the cost of confinement.
func BenchmarkColdWorkerStartUnconfined(b *testing.B) {
	benchColdStart(b, sandbox.LandlockOff)
}

func benchColdStart(b *testing.B, landlock sandbox.Landlock) {
	opts := benchOptions(b)
	opts.PoolSize = 1
	opts.Landlock = landlock
	lat := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		p, err := sandbox.NewPool(opts)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		p.Close()
		b.StartTimer()
	}
	reportPercentiles(b, lat)
}

// BenchmarkFirstCallNewVersion is the first call of a tool version a warm
// worker has never seen: contract check, a fresh interpreter, compilation,
// the call.
func BenchmarkFirstCallNewVersion(b *testing.B) {
	opts := benchOptions(b)
	opts.PoolSize = 1
	p := newPool(b, opts)
	ctx := context.Background()
	if _, err := p.Run(ctx, warmCall); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := warmCall
		c.Source = []byte(fmt.Sprintf("%s\n// version %d\n", calculator, i))
		start := time.Now()
		_, err := p.Run(ctx, c)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkThroughputPool is warm calls from many callers at once through
// the default pool (one worker per CPU).
func BenchmarkThroughputPool(b *testing.B) {
	opts := benchOptions(b)
	opts.PoolSize = 0 // the default: runtime.NumCPU()
	p := newPool(b, opts)
	ctx := context.Background()
	if _, err := p.Run(ctx, warmCall); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(4) // callers per GOMAXPROCS, so that calls queue
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Run(ctx, warmCall); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric(float64(runtime.NumCPU()), "workers")
}

// BenchmarkInProcessColdBurst is a burst of 64 concurrent calls of a tool
// version no call has loaded yet: the time until all have answered.
func BenchmarkInProcessColdBurst(b *testing.B) {
	r := sandbox.NewInProcess(benchOptions(b))
	defer r.Close()
	const burst = 64
	for i := 0; i < b.N; i++ {
		src := fmt.Sprintf("%s\n// version %d\n", echo, i)
		var wg sync.WaitGroup
		for range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Run(context.Background(), sandbox.Call{Tool: "echo", Source: []byte(src), Input: []byte(`{"text":"x"}`)}); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}
