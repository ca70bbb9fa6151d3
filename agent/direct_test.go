package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/toolbox"
)

// calcTool is a calculator whose schema forbids extra properties, as every
// generated tool's does; it records the arguments it was called with.
func calcTool(got *[]string) *fakeTool {
	calc := &fakeTool{spec: toolbox.Spec{Name: "calculator", Category: "math", Description: "evaluates arithmetic", Origin: adaptbot.OriginBuiltin,
		Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"],"additionalProperties":false}`)}}
	var mu sync.Mutex
	calc.fn = func(args json.RawMessage) (string, error) {
		mu.Lock()
		*got = append(*got, string(args))
		mu.Unlock()
		return "17 * 23 + 4 = 395", nil
	}
	return calc
}

// TestDirectAnswer checks that a call the model marks as the answer is
// answered with the tool's output, streamed as it is, in one model round
// trip, and that without the mark the synthesizer answers in two. Either
// way the tool sees its own arguments only: the flag is taken out before
// the tool's validation, whose schema forbids extra properties.
func TestDirectAnswer(t *testing.T) {
	for _, tt := range []struct {
		args      string
		wantCalls int
		direct    bool
		response  string
	}{
		{`{"expression":"17 * 23 + 4","output_is_answer":true}`, 1, true, "17 * 23 + 4 = 395"},
		{`{"expression":"17 * 23 + 4","output_is_answer":"true"}`, 1, true, "17 * 23 + 4 = 395"},
		{`{"expression":"17 * 23 + 4","output_is_answer":false}`, 2, false, "It is 395."},
		{`{"expression":"17 * 23 + 4"}`, 2, false, "It is 395."},
	} {
		var got []string
		calc := calcTool(&got)
		model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
			if isClassifier(r) {
				return call("calculator", tt.args)
			}
			return say("It is 395.")
		}}
		a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{})
		var streamed strings.Builder
		res, err := a.Chat(context.Background(), Request{Message: "What is 17 * 23 + 4?", Stream: func(s string) { streamed.WriteString(s) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.LLMCalls != tt.wantCalls || res.Direct != tt.direct || res.Response != tt.response || streamed.String() != tt.response {
			t.Errorf("%s: calls %d, direct %v, response %q, streamed %q", tt.args, res.LLMCalls, res.Direct, res.Response, streamed.String())
		}
		if len(got) != 1 || got[0] != `{"expression":"17 * 23 + 4"}` {
			t.Errorf("%s: the tool got %q", tt.args, got)
		}
		if *res.Extraction != true || *res.Execution != true || res.Path != "calculator" {
			t.Errorf("%s: result = %+v", tt.args, res)
		}
		var nodes []string
		for _, st := range res.Trace {
			nodes = append(nodes, st.Node)
			if st.Node == NodeExecute && (st.Direct != tt.direct || string(st.Arguments) != `{"expression":"17 * 23 + 4"}`) {
				t.Errorf("%s: execute step = %+v", tt.args, st)
			}
		}
		want := "classifier,execute,synthesizer"
		if tt.direct {
			want = "classifier,execute,direct"
		}
		if strings.Join(nodes, ",") != want {
			t.Errorf("%s: trace %v, want %s", tt.args, nodes, want)
		}
	}
}

// TestDirectFlagIsOffered checks which tools the model may answer with: a
// local tool gets the flag beside its own properties, its schema otherwise
// unchanged; a tool that opted out (const Direct = false) and an external
// MCP server's tool do not.
func TestDirectFlagIsOffered(t *testing.T) {
	var got []string
	calc := calcTool(&got)
	raw := tool("raw_dump", "misc", "dumps internal state")
	raw.spec.NoDirect = true
	remote := tool("srv/lookup", "srv", "looks things up")
	remote.spec.Origin = adaptbot.OriginRemote
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response { return say("hi") }}
	a, _ := New(Deps{Model: model, Tools: newTools(calc, raw, remote)}, Config{Passive: true})
	if _, err := a.Chat(context.Background(), Request{Message: "hello"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range model.Requests()[0].Functions {
		var schema struct {
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(f.Parameters, &schema); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		_, has := schema.Properties[DirectFlag]
		switch f.Name {
		case "calculator":
			if !has || schema.Properties["expression"] == nil || len(schema.Required) != 1 || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
				t.Errorf("calculator's schema: %s", f.Parameters)
			}
		case "raw_dump", "srv__lookup":
			if has {
				t.Errorf("%s is offered the flag: %s", f.Name, f.Parameters)
			}
		}
	}
}

// TestDirectAnswerNeedsEveryCallMarked: the calls of a round answer
// directly only if the model marked each of them and each returned text; a
// structured output, or a call the model did not mark, goes to the
// synthesizer.
func TestDirectAnswerNeedsEveryCallMarked(t *testing.T) {
	paris, tokyo := tool("paris_time", "time", "time in Paris"), tool("tokyo_time", "time", "time in Tokyo")
	paris.fn = func(json.RawMessage) (string, error) { return "Paris: 10:00", nil }
	tokyo.fn = func(json.RawMessage) (string, error) { return "Tokyo: 18:00", nil }
	stats := tool("text_stats", "text", "counts words")
	stats.spec.Output = json.RawMessage(`{"type":"object","properties":{"words":{"type":"integer"}}}`)
	stats.fn = func(json.RawMessage) (string, error) { return `{"words":3}`, nil }
	for _, tt := range []struct {
		name      string
		calls     []llm.FunctionCall
		wantCalls int
		response  string
	}{
		{"both marked", []llm.FunctionCall{
			{Name: "paris_time", Arguments: json.RawMessage(`{"q":"now","output_is_answer":true}`)},
			{Name: "tokyo_time", Arguments: json.RawMessage(`{"q":"now","output_is_answer":true}`)},
		}, 1, "Paris: 10:00\n\nTokyo: 18:00"},
		{"one marked", []llm.FunctionCall{
			{Name: "paris_time", Arguments: json.RawMessage(`{"q":"now","output_is_answer":true}`)},
			{Name: "tokyo_time", Arguments: json.RawMessage(`{"q":"now"}`)},
		}, 2, "synthesized"},
		{"structured", []llm.FunctionCall{
			{Name: "text_stats", Arguments: json.RawMessage(`{"q":"a b c","output_is_answer":true}`)},
		}, 2, "synthesized"},
	} {
		model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
			if isClassifier(r) {
				return calls(tt.calls...)
			}
			return say("synthesized")
		}}
		a, _ := New(Deps{Model: model, Tools: newTools(paris, tokyo, stats)}, Config{})
		res, err := a.Chat(context.Background(), Request{Message: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if res.LLMCalls != tt.wantCalls || res.Response != tt.response || res.Direct != (tt.wantCalls == 1) {
			t.Errorf("%s: calls %d, response %q, direct %v", tt.name, res.LLMCalls, res.Response, res.Direct)
		}
	}
}

// TestDirectAnswerOfAFailedCall: a marked call that fails is reported as
// a failure, never shown as the answer, and no model is asked to phrase it.
func TestDirectAnswerOfAFailedCall(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	calc.fn = func(json.RawMessage) (string, error) { return "", errors.New("division by zero") }
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return call("calculator", `{"q":"1/0","output_is_answer":true}`)
		}
		t.Error("the model was asked again")
		return say("?")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "1/0"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Direct || res.LLMCalls != 1 || !strings.Contains(res.Response, "did not work") || *res.Execution {
		t.Errorf("result = %+v", res)
	}
}

// TestStripFlag checks the flag's removal from arguments of every shape.
func TestStripFlag(t *testing.T) {
	for _, tt := range []struct {
		in, out string
		set     bool
	}{
		{`{"a":1,"output_is_answer":true}`, `{"a":1}`, true},
		{`{"output_is_answer":false}`, `{}`, false},
		{`{"a":1,"output_is_answer":"yes"}`, `{"a":1}`, false},
		{`{"a":"output_is_answer"}`, `{"a":"output_is_answer"}`, false},
		{`{"a":`, `{"a":`, false},
		{`["output_is_answer"]`, `["output_is_answer"]`, false},
	} {
		out, set := stripFlag(json.RawMessage(tt.in))
		if string(out) != tt.out || set != tt.set {
			t.Errorf("stripFlag(%s) = %s, %v; want %s, %v", tt.in, out, set, tt.out, tt.set)
		}
	}
	// A tool that has a property of that name keeps it, and is not
	// offered the flag.
	if _, ok := withFlag(json.RawMessage(`{"type":"object","properties":{"output_is_answer":{"type":"string"}}}`)); ok {
		t.Error("a tool's own property was taken for the flag")
	}
	if _, ok := withFlag(json.RawMessage(`{"type":"string"}`)); ok {
		t.Error("the flag was added to a schema that is not an object's")
	}
}

// TestParallelCallsOneFails checks that a call failing does not cancel the
// others of its round: the other finishes, and the model answers from both
// results in one more round trip, told which one failed.
func TestParallelCallsOneFails(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	good, bad := tool("paris_time", "time", "time in Paris"), tool("tokyo_time", "time", "time in Tokyo")
	good.fn = func(json.RawMessage) (string, error) {
		started.Done()
		<-both
		time.Sleep(20 * time.Millisecond) // still running when the other has failed
		return "10:00", nil
	}
	bad.fn = func(json.RawMessage) (string, error) {
		started.Done()
		<-both
		return "", errors.New("the clock is broken")
	}
	var seen []string
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return calls(llm.FunctionCall{Name: "paris_time", Arguments: json.RawMessage(`{"q":"now"}`)},
				llm.FunctionCall{Name: "tokyo_time", Arguments: json.RawMessage(`{"q":"now"}`)})
		}
		for _, m := range r.Messages {
			if m.Role == llm.Tool {
				seen = append(seen, m.Name+"="+m.Content)
			}
		}
		return say("Paris: 10:00; Tokyo's time is unavailable.")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(good, bad)}, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Chat(ctx, Request{Message: "time in Paris and Tokyo"})
	if err != nil {
		t.Fatal(err)
	}
	if res.LLMCalls != 2 || res.Response != "Paris: 10:00; Tokyo's time is unavailable." || *res.Execution {
		t.Errorf("result = %+v", res)
	}
	if strings.Join(seen, ",") != "paris_time=10:00,tokyo_time=Error: the clock is broken" {
		t.Errorf("the model saw %q", seen)
	}
}
