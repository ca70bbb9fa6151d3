package toolbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/sandbox"
)

// TestLocalChecksItsOutput: a local tool's result that breaks its output
// schema fails its call, as a bad output the failure cases learn from;
// one that keeps it passes, and a new version brings its own schema.
func TestLocalChecksItsOutput(t *testing.T) {
	counter := localTool("counter", 1)
	counter.Output = json.RawMessage(numberSchema)
	out := `{"n": "many"}`
	reg := newFakeRegistry(counter)
	set := New(reg, fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) { return sandbox.Result{Output: out}, nil }})
	call := func() (string, error) {
		t.Helper()
		tool, ok := set.Tool("counter")
		if !ok {
			t.Fatal("no counter")
		}
		return tool.Call(context.Background(), json.RawMessage(`{"n": 1}`))
	}
	got, err := call()
	if err == nil || adaptbot.FailureOf(err) != adaptbot.FailBadOutput || adaptbot.FailureOf(err) != adaptbot.FailBadOutput {
		t.Fatalf("Call = %q, %v; want a bad output", got, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "tool counter") || !strings.Contains(msg, "does not match its output schema") {
		t.Errorf("error %q does not say the result breaks the tool's output schema", msg)
	}

	out = `{"n": 3}`
	if got, err := call(); err != nil || got != out {
		t.Errorf("Call = %q, %v; want %q", got, err, out)
	}

	// Version 2 returns a string: its schema, not version 1's, decides.
	v2 := localTool("counter", 2)
	v2.Output = json.RawMessage(`{"type":"object","properties":{"n":{"type":"string"}},"required":["n"]}`)
	reg.put(v2)
	out = `{"n": "many"}`
	if got, err := call(); err != nil || got != out {
		t.Errorf("version 2: Call = %q, %v; want %q", got, err, out)
	}
}

// TestCheckOutput: a tool that is not a Local is checked against its spec.
func TestCheckOutput(t *testing.T) {
	spec := Spec{Name: "liar", Output: json.RawMessage(numberSchema)}
	if err := CheckOutput(fakeTool{spec: spec}, `{"n": "many"}`); adaptbot.FailureOf(err) != adaptbot.FailBadOutput {
		t.Errorf("CheckOutput = %v, want a bad output", err)
	}
	if err := CheckOutput(fakeTool{spec: spec}, `{"n": 2}`); err != nil {
		t.Errorf("CheckOutput = %v, want nil", err)
	}
	if err := CheckOutput(fakeTool{spec: Spec{Name: "plain"}}, "any text"); err != nil {
		t.Errorf("CheckOutput without a schema = %v, want nil", err)
	}
}

type fakeTool struct{ spec Spec }

func (f fakeTool) Spec() Spec { return f.spec }
func (f fakeTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", nil
}
