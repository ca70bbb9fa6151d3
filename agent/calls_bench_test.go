package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// napSource is a tool that takes one second, in the sandbox.
const napSource = `// Package nap waits one second and says so.
package nap

import (
	"context"
	"time"
)

// Input holds the parameters.
type Input struct {
	Label string ` + "`json:\"label\"`" + `
}

// Execute waits one second.
func Execute(ctx context.Context, in Input) (string, error) {
	time.Sleep(time.Second)
	return in.Label + " done", nil
}
`

// BenchmarkParallelCalls: two calls of a tool that takes 1 s, from one
// model reply, run in the sandbox (in-process interpreters, each call its
// own) at once. ns/op is the whole chat, model time zero; serial calls
// would take over 2 s.
//
//	go test ./agent/ -run '^$' -bench BenchmarkParallelCalls -benchtime 3x
func BenchmarkParallelCalls(b *testing.B) {
	dir := b.TempDir()
	runner := sandbox.NewInProcess(sandbox.Options{Log: slog.New(slog.DiscardHandler), CallTimeout: 10 * time.Second})
	b.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(b.Context(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "registry.json"), Compiler: runner})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Put(b.Context(), "nap", []byte(napSource), registry.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return calls(llm.FunctionCall{Name: "nap", Arguments: json.RawMessage(`{"label":"a"}`)},
				llm.FunctionCall{Name: "nap", Arguments: json.RawMessage(`{"label":"b"}`)})
		}
		return say("Both done.")
	}}
	a, err := New(Deps{Model: model, Tools: toolbox.New(reg, runner)}, Config{Passive: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := a.Chat(context.Background(), Request{Message: "nap twice"})
		if err != nil || res.Error != "" || len(res.Tools) != 2 {
			b.Fatalf("chat: %v %+v", err, res)
		}
	}
}

// BenchmarkDirectAnswer: one-tool questions against a scripted model with a
// fixed 300 ms latency per call, answered directly (the model marks the
// call as the answer: one model call) and the way they were before (the
// synthesizer phrases the output: two), in one run. It reports the p50
// chat latency of each and their ratio.
//
//	go test ./agent/ -run '^$' -bench BenchmarkDirectAnswer -benchtime 10x
func BenchmarkDirectAnswer(b *testing.B) {
	const latency = 300 * time.Millisecond
	p50 := func(direct bool) time.Duration {
		args := `{"expression":"17 * 23 + 4"}`
		if direct {
			args = `{"expression":"17 * 23 + 4","output_is_answer":true}`
		}
		var got []string
		model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
			time.Sleep(latency)
			if isClassifier(r) {
				return call("calculator", args)
			}
			return say("17 * 23 + 4 is 395.")
		}}
		a, err := New(Deps{Model: model, Tools: newTools(calcTool(&got))}, Config{})
		if err != nil {
			b.Fatal(err)
		}
		var times []time.Duration
		for range b.N {
			began := time.Now()
			res, err := a.Chat(context.Background(), Request{Message: "What is 17 * 23 + 4?"})
			if err != nil || res.Direct != direct {
				b.Fatalf("chat: %v, direct %v", err, res.Direct)
			}
			times = append(times, time.Since(began))
		}
		slices.Sort(times)
		return times[len(times)/2]
	}
	b.ResetTimer()
	direct, before := p50(true), p50(false)
	b.ReportMetric(float64(direct.Milliseconds()), "p50_direct_ms")
	b.ReportMetric(float64(before.Milliseconds()), "p50_synthesized_ms")
	b.ReportMetric(float64(direct)/float64(before), "ratio")
}
