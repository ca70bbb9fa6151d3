package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot/cluster"
	"adaptbot/cluster/clustertest"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// BenchmarkChangeReachesOtherReplica measures how long a tool put on one
// replica takes to serve on another: A's registry accepts it, the mirror
// writes it to the bucket and store, B's watch fetches and accepts it.
// Reports p50 and p99 in ms.
func BenchmarkChangeReachesOtherReplica(b *testing.B) {
	srv := clustertest.Start(b)
	a := openBenchReplica(b, srv.URL(), "a")
	other := openBenchReplica(b, srv.URL(), "b")
	arrived := make(chan string, 1)
	other.reg.OnChange(func(ev registry.Event) {
		if ev.Kind == registry.Added || ev.Kind == registry.Updated {
			select {
			case arrived <- ev.Entry.SHA256:
			default:
			}
		}
	})
	var took []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		src := strings.ReplaceAll(echoTool, "return in.Text, nil", fmt.Sprintf("return in.Text + %q, nil", strconv.Itoa(i)))
		began := time.Now()
		e, err := a.reg.Put(context.Background(), "echo", []byte(src), registry.PutOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for sha := range arrived {
			if sha == e.SHA256 {
				break
			}
		}
		took = append(took, time.Since(began))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

func openBenchReplica(b *testing.B, url, id string) *replica {
	b.Helper()
	dir := b.TempDir()
	reg, err := registry.Open(context.Background(), registry.Options{ToolsDir: dir + "/tools", Path: dir + "/r.json", HistoryKeep: 2, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	m, err := cluster.OpenMirror(context.Background(), connect(b, url, id), reg, cluster.MirrorOptions{Replica: id, Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx, ready) //nolint:errcheck
	}()
	b.Cleanup(func() { cancel(); <-done })
	<-ready
	return &replica{reg: reg, mirror: m}
}

// BenchmarkToolCalls compares tool calls per second through the fleet, with
// 1, 2 and 4 fleet worker processes (each a pool of one sandbox worker
// process, as `adaptbot worker --nats` with ADAPTBOT_WORKERS=1), against a
// local pool of as many sandbox workers; callers run in parallel (8 per
// CPU). "serial" is one caller: the overhead of a fleet call over a local
// one.
func BenchmarkToolCalls(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("local/workers=%d", n), func(b *testing.B) {
			pool, err := sandbox.NewPool(poolOptions(n))
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			benchCalls(b, pool, true)
		})
		b.Run(fmt.Sprintf("fleet/workers=%d", n), func(b *testing.B) {
			srv := clustertest.Start(b)
			for i := range n {
				startFleetProcess(b, srv.URL(), 1, fmt.Sprintf("w%d", i))
			}
			fleet := cluster.NewFleet(connect(b, srv.URL(), "replica"), 10*time.Second)
			waitForFleet(b, fleet)
			benchCalls(b, fleet, true)
		})
	}
	b.Run("local/serial", func(b *testing.B) {
		pool, err := sandbox.NewPool(poolOptions(1))
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		benchCalls(b, pool, false)
	})
	b.Run("fleet/serial", func(b *testing.B) {
		srv := clustertest.Start(b)
		startFleetProcess(b, srv.URL(), 1, "w")
		fleet := cluster.NewFleet(connect(b, srv.URL(), "replica"), 10*time.Second)
		waitForFleet(b, fleet)
		benchCalls(b, fleet, false)
	})
}

func benchCalls(b *testing.B, r sandbox.Runner, parallel bool) {
	call := echoCall("hello")
	if _, err := r.Run(context.Background(), call); err != nil { // compile once
		b.Fatal(err)
	}
	b.ResetTimer()
	began := time.Now()
	if parallel {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := r.Run(context.Background(), call); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		for b.Loop() {
			if _, err := r.Run(context.Background(), call); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "calls/s")
}

// startFleetProcess starts this test binary as a fleet worker process with
// a pool of poolSize sandbox workers.
func startFleetProcess(b testing.TB, url string, poolSize int, id string) {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fleetWorkerEnv+"="+url, fleetPoolEnv+"="+strconv.Itoa(poolSize))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck
}

// BenchmarkRows measures what a row costs in a cluster: "add-µs" is the
// time inside Add (which runs under the logger's lock), and rows/s how fast
// rows reach the stream end to end, b.N rows logged as fast as possible
// and all stored. Past 4,096 rows waiting, Add writes to the disk spool
// itself, so a burst like this one pays that.
func BenchmarkRows(b *testing.B) {
	for _, burst := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("burst=%d", burst), func(b *testing.B) {
			srv := clustertest.Start(b)
			r, err := cluster.OpenRows(connect(b, srv.URL(), "a"), cluster.RowsOptions{Replica: "a", SpoolDir: b.TempDir(), Log: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			row := row("x")
			var inAdd time.Duration
			n := 0
			began := time.Now()
			for b.Loop() {
				for range burst {
					n++
					row.RequestID = strconv.Itoa(n)
					t := time.Now()
					r.Add(row)
					inAdd += time.Since(t)
				}
				for r.Spooled() > 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			b.ReportMetric(float64(inAdd.Microseconds())/float64(n), "add-µs")
			b.ReportMetric(float64(n)/time.Since(began).Seconds(), "rows/s")
		})
	}
}

// BenchmarkRowCommit measures what making a request's row durable before
// its answer costs: "commit-µs" is the mean wait inside Commit, by
// requests at once (clients), with JetStream answering (stream) or NATS
// away (spool: a file written and fsynced per row, the folder once per
// batch). Rows committed at once share one batch of publishes, so the wait
// grows slower than the clients.
func BenchmarkRowCommit(b *testing.B) {
	for _, where := range []string{"stream", "spool"} {
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/clients=%d", where, clients), func(b *testing.B) {
				srv := clustertest.Start(b)
				r, err := cluster.OpenRows(connect(b, srv.URL(), "a"), cluster.RowsOptions{Replica: "a", SpoolDir: b.TempDir(), Log: quiet})
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				if where == "spool" {
					srv.Stop()
				}
				var n atomic.Int64
				var waited atomic.Int64
				b.SetParallelism(clients) // × GOMAXPROCS goroutines
				b.RunParallel(func(pb *testing.PB) {
					row := row("x")
					for pb.Next() {
						row.RequestID = strconv.FormatInt(n.Add(1), 10)
						t := time.Now()
						if err := r.Commit(row); err != nil {
							b.Error(err)
							return
						}
						waited.Add(int64(time.Since(t)))
					}
				})
				b.ReportMetric(float64(waited.Load())/float64(n.Load())/1e3, "commit-µs")
			})
		}
	}
}
