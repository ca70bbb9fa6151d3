package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// TestNestedCallsShowUnderTheirStep runs trip_time (testdata/tools), which
// calls unit_converter and calculator, from chat: the execute step lists
// both calls, and the result's tools name all three.
func TestNestedCallsShowUnderTheirStep(t *testing.T) {
	dir := t.TempDir()
	runner := sandbox.NewInProcess(sandbox.Options{Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(t.Context(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "registry.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tools/unit_converter/unit_converter.go", "tools/calculator/calculator.go", "testdata/tools/trip_time/trip_time.go"} {
		src, err := os.ReadFile("../" + p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(p))
		if _, err := reg.Put(t.Context(), name, src, registry.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return call("trip_time", `{"miles": 100, "speed_kmh": 80}`)
		}
		return say("About two hours.")
	}}
	a, err := New(Deps{Model: model, Tools: toolbox.New(reg, runner)}, Config{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Chat(context.Background(), Request{Message: "how long is 100 miles at 80 km/h?"})
	if err != nil || res.Error != "" {
		t.Fatalf("chat: %v %q", err, res.Error)
	}
	if !slices.Equal(res.Tools, []string{"trip_time", "unit_converter", "calculator"}) {
		t.Errorf("tools = %q", res.Tools)
	}
	var step Step
	for _, s := range res.Trace {
		if s.Node == NodeExecute {
			step = s
		}
	}
	if step.Tool != "trip_time" || len(step.Calls) != 2 {
		t.Fatalf("execute step = %+v", step)
	}
	for i, want := range []string{"unit_converter", "calculator"} {
		c := step.Calls[i]
		if c.Tool != want || c.Depth != 1 || c.Caller != "trip_time" || c.Output == "" || c.Error != "" || c.Ms <= 0 {
			t.Errorf("call %d = %+v", i, c)
		}
	}
	b, _ := json.Marshal(step)
	var asJSON struct {
		Calls []map[string]any `json:"calls"`
	}
	json.Unmarshal(b, &asJSON)
	if len(asJSON.Calls) != 2 || asJSON.Calls[0]["arguments"] == nil || asJSON.Calls[0]["depth"] != 1.0 {
		t.Errorf("the step's JSON: %s", b)
	}
}

// TestParallelNestedCallsKeepTheirChains runs trip_time twice at once, from
// one reply: each call's chain of nested calls (depth, caller, the call
// log) is its own, and neither step shows the other's calls. Run with
// -race.
func TestParallelNestedCallsKeepTheirChains(t *testing.T) {
	dir := t.TempDir()
	runner := sandbox.NewInProcess(sandbox.Options{Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { runner.Close() })
	reg, err := registry.Open(t.Context(), registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "registry.json"), Compiler: runner})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tools/unit_converter/unit_converter.go", "tools/calculator/calculator.go", "testdata/tools/trip_time/trip_time.go"} {
		src, err := os.ReadFile("../" + p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Put(t.Context(), filepath.Base(filepath.Dir(p)), src, registry.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return calls(llm.FunctionCall{Name: "trip_time", Arguments: json.RawMessage(`{"miles": 100, "speed_kmh": 80}`)},
				llm.FunctionCall{Name: "trip_time", Arguments: json.RawMessage(`{"miles": 50, "speed_kmh": 40}`)})
		}
		return say("Two hours each.")
	}}
	a, err := New(Deps{Model: model, Tools: toolbox.New(reg, runner)}, Config{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Chat(context.Background(), Request{Message: "100 miles at 80 km/h, and 50 at 40?"})
	if err != nil || res.Error != "" {
		t.Fatalf("chat: %v %q", err, res.Error)
	}
	var steps []Step
	for _, s := range res.Trace {
		if s.Node == NodeExecute {
			steps = append(steps, s)
		}
	}
	if len(steps) != 2 {
		t.Fatalf("execute steps = %+v", steps)
	}
	for _, step := range steps {
		if len(step.Calls) != 2 {
			t.Errorf("step %s has %d nested calls: %+v", step.Arguments, len(step.Calls), step.Calls)
			continue
		}
		for i, want := range []string{"unit_converter", "calculator"} {
			if c := step.Calls[i]; c.Tool != want || c.Depth != 1 || c.Caller != "trip_time" || c.Error != "" {
				t.Errorf("step %s, call %d = %+v", step.Arguments, i, c)
			}
		}
	}
	if len(res.Tools) != 6 {
		t.Errorf("tools = %q", res.Tools)
	}
}
