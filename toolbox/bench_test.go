package toolbox

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"adaptbot/registry"
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
	_ = registry.Tool{}
}
