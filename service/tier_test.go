package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/llm"
	"adaptbot/sandbox"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
)

// tiered is a runner with two tiers as package native's is, as far as its
// callers can tell: a call whose input holds a "*" is said to run natively
// (Result.Tier), every other one interpreted. Both run on the sandbox
// beneath.
type tiered struct{ sandbox.Runner }

func (r tiered) Run(ctx context.Context, c sandbox.Call) (sandbox.Result, error) {
	res, err := r.Runner.Run(ctx, c)
	res.Tier = sandbox.TierInterpreted
	if strings.Contains(string(c.Input), "*") {
		res.Tier = sandbox.TierNative
	}
	return res, err
}

// TestRowAndSpanSayTheTier: the row of a request says which tier ran its
// tool calls (interpreted, native, mixed, or empty when none ran), by every
// path a call takes (a direct run, a chat's calls); the span of each call
// carries the tier that ran it (issue 31).
func TestRowAndSpanSayTheTier(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(telemetry.Enable(tp, false))
	// The model calls the calculator once per expression the message
	// lists ("compute 2+2; 3*3"), at once, then phrases the results.
	model := scripted{func(r llm.Request) llm.Response {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == llm.Tool || !strings.HasPrefix(last.Content, "compute ") {
			return llm.Response{Content: "Done."}
		}
		var calls []llm.FunctionCall
		for i, e := range strings.Split(strings.TrimPrefix(last.Content, "compute "), ";") {
			args, _ := json.Marshal(map[string]string{"expression": strings.TrimSpace(e)})
			calls = append(calls, llm.FunctionCall{ID: "c" + string(rune('1'+i)), Name: "calculator", Arguments: args})
		}
		return llm.Response{Calls: calls}
	}}
	w := newWorldOn(t, model, func(r sandbox.Runner) toolbox.Runner { return tiered{r} })

	last := func() benchmarks.Row { rows := w.rows.list(); return rows[len(rows)-1] }
	if _, err := w.svc.Run(as(bob), "calculator", json.RawMessage(`{"expression":"17 + 4"}`)); err != nil {
		t.Fatal(err)
	}
	if got := last().Tier; got != benchmarks.TierInterpreted {
		t.Errorf("run: tier %q, want interpreted", got)
	}
	exp.Reset()
	if _, err := w.svc.Run(as(bob), "calculator", json.RawMessage(`{"expression":"1 * 1 +"}`)); err == nil {
		t.Fatal("the calculator took 1 * 1 +")
	}
	if got := last().Tier; got != benchmarks.TierNative {
		t.Errorf("run that failed natively: tier %q, want native", got)
	}
	if got := toolSpanTiers(exp.GetSpans()); len(got) != 1 || got[0] != "native" {
		t.Errorf("execute_tool spans' tiers = %q, want [native]", got)
	}
	if _, err := w.svc.Run(as(bob), "calculator", json.RawMessage(`{"x":1}`)); err == nil {
		t.Fatal("bad arguments ran")
	}
	if got := last().Tier; got != "" {
		t.Errorf("run refused before the sandbox: tier %q, want empty", got)
	}

	for _, c := range []struct{ message, want string }{
		{"compute 2+2", benchmarks.TierInterpreted},
		{"compute 2*2", benchmarks.TierNative},
		{"compute 2+2; 3*3", benchmarks.TierMixed},
		{"hello", ""},
	} {
		exp.Reset()
		if _, err := w.svc.Chat(as(alice), adaptbot.ChatRequest{Message: c.message}, adaptbot.Stream{}); err != nil {
			t.Fatalf("%s: %v", c.message, err)
		}
		row := last()
		if row.Tier != c.want {
			t.Errorf("%q: row tier %q (tools %q), want %q", c.message, row.Tier, row.Tools, c.want)
		}
		want := map[string]int{}
		for _, e := range strings.Split(strings.TrimPrefix(c.message, "compute "), ";") {
			if c.want != "" {
				want[map[bool]string{true: "native", false: "interpreted"}[strings.Contains(e, "*")]]++
			}
		}
		got := map[string]int{}
		for _, tier := range toolSpanTiers(exp.GetSpans()) {
			got[tier]++
		}
		if len(got) != len(want) || got["native"] != want["native"] || got["interpreted"] != want["interpreted"] {
			t.Errorf("%q: execute_tool spans' tiers %v, want %v", c.message, got, want)
		}
	}
}

// toolSpanTiers are the adaptbot.sandbox.tier attributes of the
// execute_tool spans, in order ("" for a span without one).
func toolSpanTiers(spans tracetest.SpanStubs) []string {
	var out []string
	for _, sp := range spans {
		if !strings.HasPrefix(sp.Name, "execute_tool") {
			continue
		}
		tier := ""
		for _, a := range sp.Attributes {
			if a.Key == telemetry.KeyToolTier {
				tier = a.Value.AsString()
			}
		}
		out = append(out, tier)
	}
	return out
}
