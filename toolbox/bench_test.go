package toolbox

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"adaptbot/sandbox"
)

// benchSet is a Set of n local tools and n external ones.
func benchSet(b *testing.B, n int) *Set {
	b.Helper()
	reg := newFakeRegistry()
	for i := range n {
		t := localTool(fmt.Sprintf("tool_%04d", i), 1)
		reg.tools[t.Name] = t
	}
	set := New(reg, fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) { return sandbox.Result{Output: "ok"}, nil }})
	hub := &fakeHub{call: func(string, string, json.RawMessage) (string, error) { return "ok", nil }}
	for i := range n {
		hub.specs = append(hub.specs, remoteSpec(fmt.Sprintf("srv%d", i%10), fmt.Sprintf("tool_%04d", i), numberSchema))
	}
	set.Join(hub)
	if set.Len() != 2*n {
		b.Fatalf("Len = %d", set.Len())
	}
	return set
}

// BenchmarkSetTool looks up a local and a remote tool among 2,000.
func BenchmarkSetTool(b *testing.B) {
	set := benchSet(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := set.Tool("tool_0500"); !ok {
			b.Fatal("missing")
		}
		if _, ok := set.Tool("srv0/tool_0500"); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkSetServing lists 2,000 tools.
func BenchmarkSetServing(b *testing.B) {
	set := benchSet(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if len(set.Serving()) != 2000 {
			b.Fatal("short")
		}
	}
}

// BenchmarkLocalCall validates the arguments and runs a fake sandbox.
func BenchmarkLocalCall(b *testing.B) {
	set := benchSet(b, 10)
	tool, _ := set.Tool("tool_0001")
	args := json.RawMessage(`{"n": 3}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncLocal applies one registry change among 1,000 tools.
func BenchmarkSyncLocal(b *testing.B) {
	set := benchSet(b, 1000)
	reg := set.reg.(*fakeRegistry)
	v := 1
	b.ReportAllocs()
	for b.Loop() {
		v++
		reg.put(localTool("tool_0500", v))
	}
}

// BenchmarkNestedCall measures what a tool's call of another tool costs,
// in worker processes (a pool of two, the default on a two-core machine,
// so a chain of four borrows extra workers): each round calls, through the
// Set, the leaf tool directly, a calling tool told to skip its call (the
// caller's own cost: the same code but the call), a tool that calls the
// leaf (depth 1) and a chain of three calls down to the leaf (depth 3), in
// turn so that load on the machine hits all four alike. The nested cost of
// one call is what depth 1 takes beyond the caller's own cost and the
// leaf's; at depth 3, a third of what the chain takes beyond three callers
// and the leaf.
//
//	go test -run '^$' -bench NestedCall -benchtime 2000x ./toolbox/
func BenchmarkNestedCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	pool, err := sandbox.NewPool(sandbox.Options{PoolSize: 2, CallTimeout: 10 * time.Second,
		WorkerCommand: []string{exe}, WorkerEnv: []string{workerEnv + "=1"}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	reg := newFakeRegistry()
	for name, src := range map[string]string{
		"leaf": leaf,
		"one":  caller("one", "leaf", `{}`),
		"a":    caller("a", "b", `{}`), "b": caller("b", "c", `{}`), "c": caller("c", "leaf", `{}`),
	} {
		reg.tools[name] = toolFrom(b, name, src)
	}
	set := New(reg, pool)
	names := []string{"leaf", "one", "one", "a"}
	args := []json.RawMessage{nil, json.RawMessage(`{"skip": true}`), nil, nil}
	tools := make([]Tool, len(names))
	for i, n := range names {
		tools[i], _ = set.Tool(n)
	}
	lat := make([][]time.Duration, len(names))
	ctx := context.Background()
	for range 20 { // warm every worker, extra ones included
		for i, t := range tools {
			if _, err := t.Call(ctx, args[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i, t := range tools {
			began := time.Now()
			_, err := t.Call(ctx, args[i])
			lat[i] = append(lat[i], time.Since(began))
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	p := func(i int, q float64) float64 {
		l := slices.Clone(lat[i])
		slices.Sort(l)
		return float64(l[int(q*float64(len(l)-1))]) / float64(time.Microsecond)
	}
	for i, label := range []string{"direct", "caller", "depth1", "depth3"} {
		b.ReportMetric(p(i, 0.50), label+"-p50-µs")
		b.ReportMetric(p(i, 0.99), label+"-p99-µs")
	}
	b.ReportMetric(p(2, 0.50)-p(1, 0.50)-p(0, 0.50), "nested1-cost-p50-µs")
	b.ReportMetric((p(3, 0.50)-3*p(1, 0.50)-p(0, 0.50))/3, "nested3-cost-per-call-p50-µs")
	if st := pool.Stats(); st.Extra > 2 {
		b.Errorf("%d extra workers", st.Extra)
	}
}

// BenchmarkLocalCallWithOutput is BenchmarkLocalCall for a tool with an
// output schema: what checking each result against it adds.
func BenchmarkLocalCallWithOutput(b *testing.B) {
	t := localTool("counter", 1)
	t.Output = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"words":{"type":["array","null"],"items":{"type":"string"}}},"required":["n","words"],"additionalProperties":false}`)
	set := New(newFakeRegistry(t), fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) {
		return sandbox.Result{Output: `{"n":3,"words":["a","b","c"]}`}, nil
	}})
	tool, _ := set.Tool("counter")
	args := json.RawMessage(`{"n": 3}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Call(context.Background(), args); err != nil {
			b.Fatal(err)
		}
	}
}
