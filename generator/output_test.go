package generator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/sandbox"
)

const counterSource = `// Package counter counts the letters of a word.
package counter

import "context"

// Input is the word.
type Input struct {
	Word string ` + "`json:\"word\" jsonschema:\"the word\"`" + `
}

// Output is the count.
type Output struct {
	Letters int ` + "`json:\"letters\"`" + `
}

// Execute counts.
func Execute(ctx context.Context, in Input) (Output, error) { return Output{Letters: len(in.Word)}, nil }
`

var counterExamples = []Example{
	{Input: json.RawMessage(`{"word": "abc"}`), Contains: `"letters":3`},
	{Input: json.RawMessage(`{"word": ""}`), Contains: `"letters":0`},
}

// TestGateChecksOutput passes tools that return an Output struct: the
// output schema they would publish is a promise, and the gate holds each
// example's result to it.
func TestGateChecksOutput(t *testing.T) {
	f := newFixture(t, nil)
	gate := func(src string) verdict {
		t.Helper()
		v, err := f.gen.gate(t.Context(), "counter", candidate{Source: src, Examples: counterExamples}, func(Event) {})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := gate(counterSource)
	if v.tool == nil || len(v.tool.spec.Output) == 0 {
		t.Fatalf("gate: %q; want the tool to pass with an output schema", v.problems)
	}
	// The interpreter writes unexported fields too (as "Xsecret"): the
	// contract refuses them, and a json:"-" tag keeps them out.
	v = gate(strings.Replace(counterSource, "Letters int", "secret  int\n\tLetters int", 1))
	if v.tool != nil || len(v.problems) != 1 || !strings.Contains(v.problems[0], "Output's field secret is unexported") {
		t.Errorf("unexported field: problems %q", v.problems)
	}
	v = gate(strings.Replace(counterSource, "Letters int", "secret  int `json:\"-\"`\n\tLetters int", 1))
	if v.tool == nil {
		t.Errorf("unexported field tagged json:\"-\": problems %q", v.problems)
	}

	// A result that breaks the schema, whatever made it, fails its example.
	g := &Generator{opts: f.gen.opts}
	g.opts.Runner = rewriting{Runner: f.runner, to: `{"letters":"three"}`}
	v, err := g.gate(t.Context(), "counter", candidate{Source: counterSource, Examples: []Example{
		{Input: json.RawMessage(`{"word": "abc"}`), Contains: `"letters"`},
		{Input: json.RawMessage(`{"word": ""}`), Contains: `"letters"`},
	}}, func(Event) {})
	if err != nil || v.tool != nil || len(v.problems) != 2 || !strings.Contains(v.problems[0], "Output, as returned, does not fit the schema derived from its declaration") {
		t.Errorf("problems = %q, %v; want both examples refused for their results", v.problems, err)
	}
}

// rewriting is a sandbox whose successful calls all answer to.
type rewriting struct {
	sandbox.Runner
	to string
}

func (r rewriting) Run(ctx context.Context, c sandbox.Call) (sandbox.Result, error) {
	res, err := r.Runner.Run(ctx, c)
	if err == nil {
		res.Output = r.to
	}
	return res, err
}

// TestCheckTakesTheSourceAsItIs runs the gate on a tool from elsewhere:
// what passes is exactly what was given (no extraction from a reply, no
// fixes), and nothing is saved.
func TestCheckTakesTheSourceAsItIs(t *testing.T) {
	f := newFixture(t, nil)
	ctx := t.Context()
	if problems, err := f.gen.Check(ctx, "counter", []byte(counterSource), counterExamples); err != nil || len(problems) > 0 {
		t.Fatalf("Check(counter) = %q, %v", problems, err)
	}
	if problems, _ := f.gen.Check(ctx, "counter", []byte("```go\n"+counterSource+"```\n"), counterExamples); len(problems) == 0 {
		t.Error("Check accepted a source inside a Markdown fence: it must check what it is given")
	}
	if problems, _ := f.gen.Check(ctx, "counter", []byte(strings.Replace(counterSource, "package counter", "package other", 1)), counterExamples); len(problems) == 0 || !strings.Contains(problems[0], `package is "other", must be "counter"`) {
		t.Errorf("Check of a misnamed package = %q, want the contract's problem, not a fix", problems)
	}
	if problems, _ := f.gen.Check(ctx, "counter", []byte(counterSource), []Example{{Input: json.RawMessage(`{"word": "ab"}`), Contains: `"letters":3`}, counterExamples[1]}); len(problems) != 1 {
		t.Errorf("Check with a failing example = %q, want that example's problem", problems)
	}
	if _, ok := f.reg.Entry("counter"); ok {
		t.Error("Check saved the tool")
	}
	general := strings.ReplaceAll(counterSource, "counter", "general")
	if _, err := f.gen.Check(ctx, "general", []byte(general), counterExamples); adaptbot.KindOf(err) != adaptbot.Invalid {
		t.Errorf("Check(general) = %v, want the reserved name refused", err)
	}
}
