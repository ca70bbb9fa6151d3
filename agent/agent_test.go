package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// The kinds of request the agent makes.
// isSynthesizer reports whether r asks for an answer from tools' results:
// its last message is a result of a tool's call (not of request_tools).
func isSynthesizer(r llm.Request) bool {
	last := r.Messages[len(r.Messages)-1]
	return r.Force == "" && last.Role == llm.Tool && last.Name != fnRequestTools
}

// userText is the text of r's last user message: the message being answered.
func userText(r llm.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.User {
			return r.Messages[i].Content
		}
	}
	return ""
}

// isClassifier reports whether r decides a message's way.
func isClassifier(r llm.Request) bool { return r.Force == "" && !isSynthesizer(r) }

func hasFunction(r llm.Request, name string) bool {
	for _, f := range r.Functions {
		if f.Name == name {
			return true
		}
	}
	return false
}

var usage = llm.Usage{PromptTokens: 10, CompletionTokens: 2}

func call(name, args string) llm.Response {
	return calls(llm.FunctionCall{Name: name, Arguments: json.RawMessage(args)})
}

func calls(cs ...llm.FunctionCall) llm.Response { return llm.Response{Calls: cs, Usage: usage} }

func say(text string) llm.Response { return llm.Response{Content: text, Usage: usage} }

// fakeTool is a tool whose Call validates like every tool and then runs fn.
type fakeTool struct {
	spec toolbox.Spec
	fn   func(args json.RawMessage) (string, error)
}

func (t *fakeTool) Spec() toolbox.Spec { return t.spec }

func (t *fakeTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	if err := contract.Validate(t.spec.Parameters, args); err != nil {
		return "", &toolbox.ArgsError{Tool: t.spec.Name, Reason: err.Error(), Schema: t.spec.Parameters}
	}
	if t.fn == nil {
		return "ok", nil
	}
	return t.fn(args)
}

// fakeTools is a toolbox of the given tools.
type fakeTools struct{ tools map[string]toolbox.Tool }

var _ Tools = (*fakeTools)(nil)

func (f *fakeTools) Serving() []toolbox.Tool {
	var out []toolbox.Tool
	for _, t := range f.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

func (f *fakeTools) Len() int { return len(f.tools) }

func (f *fakeTools) Tool(name string) (toolbox.Tool, bool) {
	t, ok := f.tools[name]
	return t, ok
}

func newTools(ts ...*fakeTool) *fakeTools {
	f := &fakeTools{tools: map[string]toolbox.Tool{}}
	for _, t := range ts {
		f.tools[t.spec.Name] = t
	}
	return f
}

const qSchema = `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`

func tool(name, domain, desc string) *fakeTool {
	return &fakeTool{spec: toolbox.Spec{Name: name, Category: domain, Description: desc, Origin: adaptbot.OriginBuiltin, Parameters: json.RawMessage(qSchema)}}
}

// filler returns n tools that no test query matches.
func filler(n int) []*fakeTool {
	out := make([]*fakeTool, n)
	for i := range out {
		out[i] = tool(fmt.Sprintf("tool_%02d", i), "misc", fmt.Sprintf("does job %d", i))
	}
	return out
}

func names(ts []toolbox.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	return out
}

// fakeFinder finds tools whose description contains a word of the query.
type fakeFinder struct{ tools *fakeTools }

func (f fakeFinder) Find(_ context.Context, query string, k int) []string {
	var out []string
	for _, t := range f.tools.Serving() {
		for _, w := range strings.Fields(strings.ToLower(query)) {
			if strings.Contains(strings.ToLower(t.Spec().Description), w) {
				out = append(out, t.Spec().Name)
				break
			}
		}
	}
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// TestShortlist checks what the classifier starts with. A catalog of at
// most two shortlists is shown whole, the router's picks first, with no
// discovery to offer; a larger one only what the router found, so an
// unmatched request starts empty and the model asks for more.
func TestShortlist(t *testing.T) {
	weather := tool("weather_forecast", "weather", "forecast for a town")
	small := newTools(append(filler(5), weather)...)
	a, _ := New(Deps{Tools: small, Finder: fakeFinder{small}}, Config{})
	list, whole := a.shortlist(context.Background(), "how warm is it outside")
	if len(list) != 6 || !whole {
		t.Errorf("small catalog, unmatched request: %d tools, whole %v; want all 6, whole", len(list), whole)
	}
	list, _ = a.shortlist(context.Background(), "forecast please")
	if len(list) != 6 || list[0].Spec().Name != "weather_forecast" {
		t.Errorf("small catalog: router's pick not first: %v", names(list))
	}

	large := newTools(append(filler(10), weather)...)
	a, _ = New(Deps{Tools: large, Finder: fakeFinder{large}}, Config{})
	if list, whole := a.shortlist(context.Background(), "how warm is it outside"); len(list) != 0 || whole {
		t.Errorf("large catalog, unmatched request: %v, whole %v; want none, not whole", names(list), whole)
	}
	if list, whole := a.shortlist(context.Background(), "forecast please"); len(list) != 1 || list[0].Spec().Name != "weather_forecast" || whole {
		t.Errorf("large catalog: %v, whole %v; want the router's pick alone", names(list), whole)
	}
}

func TestDiscoveryAddsToolsAndIsBounded(t *testing.T) {
	// Three tools are more than twice the shortlist of one, so the
	// classifier starts from the router's pick rather than all of them.
	fx := tool("fx_rates", "finance", "converts currency amounts")
	fx.fn = func(json.RawMessage) (string, error) { return "9.2 EUR", nil }
	tools := newTools(tool("greeter", "text", "says hello"), fx, tool("notes", "text", "keeps notes"))
	var rounds int
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		switch {
		case isClassifier(r):
			rounds++
			switch {
			case rounds == 1:
				if hasFunction(r, "fx_rates") {
					t.Errorf("fx_rates was in the first shortlist")
				}
				return call(fnRequestTools, `{"domain":"astronomy","operation":"moon phase"}`)
			case rounds == 2:
				if last := r.Messages[len(r.Messages)-1].Content; !strings.Contains(last, "No more tools found") {
					t.Errorf("empty discovery reply = %q", last)
				}
				return call(fnRequestTools, `{"domain":"finance","operation":"currency"}`)
			default:
				if !hasFunction(r, "fx_rates") {
					t.Errorf("fx_rates not offered after discovery: %v", r.Functions)
				}
				return call("fx_rates", `{"q":"10 USD in EUR"}`)
			}
		}
		return say("10 USD is 9.2 EUR.")
	}}
	a, err := New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}}, Config{Shortlist: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Chat(context.Background(), Request{Message: "hello how much is 10 dollars"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != "fx_rates" || len(res.Discovery) != 2 || len(res.Discovery[0].Found) != 0 || res.Discovery[1].Found[0] != "fx_rates" {
		t.Errorf("result = %+v", res)
	}
	// Two discovery requests, the classifier's decision and the answer.
	if res.LLMCalls != 4 || res.Usage.PromptTokens != 40 {
		t.Errorf("calls, usage = %d, %+v", res.LLMCalls, res.Usage)
	}

	// A model that keeps asking is cut off after MaxDiscovery requests.
	rounds = 0
	model.Reply = func(r llm.Request) llm.Response {
		if isClassifier(r) {
			rounds++
			if hasFunction(r, fnRequestTools) {
				return call(fnRequestTools, `{"domain":"x","operation":"y"}`)
			}
			return call(fnNeedTool, `{}`)
		}
		return llm.Response{}
	}
	tools = newTools(filler(11)...) // more than twice the default shortlist of 5
	a, _ = New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}}, Config{MaxDiscovery: 2})
	res, err = a.Chat(context.Background(), Request{Message: "something"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Discovery) != 2 || rounds != 3 || res.Path != PathNeedTool {
		t.Errorf("discovery = %d, rounds = %d, path = %s", len(res.Discovery), rounds, res.Path)
	}
}

func TestClassifierDecisions(t *testing.T) {
	tests := []struct {
		reply              llm.Response
		wantPath           string
		wantNeedTool       bool
		wantIntent         string
		wantCalls, wantRan int
	}{
		{say("Hi there."), PathGeneral, false, IntentChat, 1, 0},
		{call(fnNeedTool, `{"capability":"klingon"}`), PathNeedTool, true, IntentChat, 1, 0},
		{call("calculator", `{"q":"1+1"}`), "calculator", false, IntentChat, 2, 1},
		{call("made_up_tool", `{}`), PathNeedTool, true, IntentChat, 1, 0}, // a tool that does not exist is no tool
		{call(fnBuild, `{"action":"create","tool":"coin","summary":"flips coins"}`), "", false, IntentBuild, 1, 0},
	}
	for _, tt := range tests {
		calc := tool("calculator", "math", "evaluates arithmetic")
		ran := 0
		calc.fn = func(json.RawMessage) (string, error) { ran++; return "2", nil }
		tools := newTools(calc)
		model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
			if isClassifier(r) {
				return tt.reply
			}
			return say("ok")
		}}
		a, _ := New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}}, Config{})
		res, err := a.Chat(context.Background(), Request{Message: "1+1", Builder: &fakeBuilder{build: func(BuildRequest) *BuildResult { return &BuildResult{OK: true} }}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != tt.wantPath || res.NeedTool != tt.wantNeedTool || res.Intent != tt.wantIntent || res.LLMCalls != tt.wantCalls || ran != tt.wantRan {
			t.Errorf("reply %+v: path %q need_tool %v intent %s calls %d ran %d", tt.reply, res.Path, res.NeedTool, res.Intent, res.LLMCalls, ran)
		}
	}
}

// TestRoundTrips checks the model calls each kind of message costs.
func TestRoundTrips(t *testing.T) {
	convert := &fakeTool{spec: toolbox.Spec{Name: "unit_converter", Description: "converts units",
		Parameters: json.RawMessage(`{"type":"object","properties":{"value":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}},"required":["value","from","to"]}`)},
		fn: func(json.RawMessage) (string, error) { return "8.04672", nil }}
	calc := &fakeTool{spec: toolbox.Spec{Name: "calculator", Description: "evaluates arithmetic",
		Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`)},
		fn: func(json.RawMessage) (string, error) { return "24.14016", nil }}
	tools := newTools(convert, calc)
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		msg := userText(r)
		switch {
		case strings.HasPrefix(msg, "convert 5 miles"):
			switch {
			case isClassifier(r):
				return call("unit_converter", `{"value":5,"from":"miles","to":"km"}`)
			case !ranTool(r, "calculator"):
				return call("calculator", `{"expression":"8.04672*3"}`)
			}
			return say("5 miles is 8.05 km; times 3 is 24.14.")
		case strings.HasPrefix(msg, "how many km"):
			if isClassifier(r) {
				return call("unit_converter", `{"value":5,"from":"miles","to":"km"}`)
			}
			return say("5 miles is 8.05 km.")
		case strings.HasPrefix(msg, "translate"):
			return call(fnNeedTool, `{}`)
		}
		return say("Hello.")
	}}
	var builder *fakeBuilder
	builder = &fakeBuilder{build: func(req BuildRequest) *BuildResult {
		builder.callsBefore = model.Calls()
		return &BuildResult{Action: req.Action, Tool: req.Tool, OK: true, Summary: "Created " + req.Tool}
	}}
	a, _ := New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}}, Config{})
	tests := []struct {
		message   string
		wantCalls int
		wantTools string
		want      string
	}{
		{"hello", 1, "", "Hello."},
		{"how many km is 5 miles", 2, "unit_converter", "8.05 km"},
		{"translate this into Klingon", 1, "", "don't have a tool"},
		{"convert 5 miles to km, then multiply by 3", 3, "unit_converter,calculator", "24.14"},
	}
	for _, tt := range tests {
		res, err := a.Chat(context.Background(), Request{Message: tt.message})
		if err != nil {
			t.Fatal(err)
		}
		if res.LLMCalls != tt.wantCalls || strings.Join(res.Tools, ",") != tt.wantTools || !strings.Contains(res.Response, tt.want) {
			t.Errorf("%q: %d calls, tools %v, response %q; want %d, %s, %q", tt.message, res.LLMCalls, res.Tools, res.Response, tt.wantCalls, tt.wantTools, tt.want)
		}
	}

	// Passive mode offers every tool and costs the same round trips.
	passive, _ := New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}}, Config{Passive: true})
	if res, err := passive.Chat(context.Background(), Request{Message: "how many km is 5 miles"}); err != nil || res.LLMCalls != 2 || len(res.ToolsLoaded) != 2 {
		t.Errorf("passive: %v, %+v", err, res)
	}

	before := model.Calls()
	model.Reply = func(r llm.Request) llm.Response {
		return call(fnBuild, `{"action":"CREATE","tool":"roman_numerals","summary":"converts numbers to Roman numerals"}`)
	}
	res, err := a.Chat(context.Background(), Request{Message: "make a tool that writes Roman numerals", Builder: builder})
	if err != nil {
		t.Fatal(err)
	}
	got := builder.got
	if res.Intent != IntentBuild || builder.callsBefore-before != 1 || got.Action != "create" || got.Tool != "roman_numerals" || got.Summary == "" || got.Text != "make a tool that writes Roman numerals" {
		t.Errorf("build: intent %s, %d model calls before the build, request %+v", res.Intent, builder.callsBefore-before, got)
	}
}

// fakeBuilder records the build it is asked for.
type fakeBuilder struct {
	build       func(BuildRequest) *BuildResult
	got         BuildRequest
	callsBefore int
	ran         bool
	refuse      error // returned, and nothing built, when set
}

func (f *fakeBuilder) Build(_ context.Context, req BuildRequest, progress func(BuildStep)) (*BuildResult, error) {
	if f.refuse != nil {
		return nil, f.refuse
	}
	f.got, f.ran = req, true
	if progress != nil {
		progress(BuildStep{Stage: "write", Message: "writing the code"})
	}
	return f.build(req), nil
}

func TestBuildNeedsPermission(t *testing.T) {
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		return call(fnBuild, `{"action":"delete","tool":"calculator","summary":"delete it"}`)
	}}
	builder := &fakeBuilder{build: func(req BuildRequest) *BuildResult { return &BuildResult{OK: true} },
		refuse: fmt.Errorf("%w: deleting needs the admin role", ErrForbidden)}
	a, _ := New(Deps{Model: model, Tools: newTools()}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "delete the calculator", Builder: builder})
	if !errors.Is(err, ErrForbidden) || builder.ran || res == nil || !strings.Contains(res.Response, "admin role") || res.Intent != IntentBuild {
		t.Errorf("err %v, built %v, result %+v", err, builder.ran, res)
	}

	var steps []string
	builder.refuse = nil
	res, err = a.Chat(context.Background(), Request{Message: "delete the calculator", Builder: builder,
		Progress: func(st BuildStep) { steps = append(steps, st.Stage) }})
	if err != nil || !builder.ran || len(steps) != 1 || res.ToolBuild == nil || !res.ToolBuild.OK {
		t.Errorf("allowed: err %v, built %v, progress %v, result %+v", err, builder.ran, steps, res)
	}
}

func TestBuildWithoutBuilder(t *testing.T) {
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		return call(fnBuild, `{"action":"create","tool":"coin","summary":"flips coins"}`)
	}}
	a, _ := New(Deps{Model: model, Tools: newTools()}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "make a tool that flips coins"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Intent != IntentBuild || !strings.Contains(res.Response, "not available") {
		t.Errorf("result = %+v", res)
	}
}

func TestToolErrorIsReportedNotDressedUp(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	calc.spec.Version = 4
	calc.fn = func(json.RawMessage) (string, error) {
		return "", &sandbox.Error{Tool: "calculator", Kind: adaptbot.FailPanic, Msg: "runtime error: division by zero"}
	}
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return call("calculator", `{"q":"1/0"}`)
		}
		t.Error("the synthesizer asked the model to phrase a failure")
		return say("All good!")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "1/0"})
	if err != nil {
		t.Fatal(err)
	}
	if *res.Extraction != true || *res.Execution != false || !strings.Contains(res.Response, "division by zero") || res.LLMCalls != 1 {
		t.Errorf("result = %+v", res)
	}
	// The step says how the call failed and which version ran: a failure
	// case is recorded from it.
	if st := res.Trace[1]; st.Tool != "calculator" || st.Failure != "panic" || st.ErrorKind != st.Failure || st.Version != 4 {
		t.Errorf("execute step = %+v", st)
	}
}

// TestInvalidArgumentsAskOnce checks that arguments that break the schema go
// back to the model once with the error, and that a second failure is
// reported without running the tool.
func TestInvalidArgumentsAskOnce(t *testing.T) {
	for _, tt := range []struct {
		retry                   string
		wantCalls               int
		wantExtraction, wantRan bool
	}{
		{`{"q":"1+1"}`, 3, true, true},
		{`{"x":1}`, 2, false, false},
		{"prose", 2, false, false}, // no call at all: as good as invalid
	} {
		calc := tool("calculator", "math", "evaluates arithmetic")
		ran := false
		calc.fn = func(json.RawMessage) (string, error) { ran = true; return "2", nil }
		var retried string
		model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
			switch {
			case isClassifier(r):
				return call("calculator", `{"q":`) // not even JSON
			case r.Force == "calculator":
				retried = r.Messages[len(r.Messages)-1].Content
				if tt.retry == "prose" {
					return say("I would rather not.")
				}
				return call("calculator", tt.retry)
			}
			return say("1+1 is 2.")
		}}
		a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{})
		res, err := a.Chat(context.Background(), Request{Message: "1+1"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(retried, "Those arguments are invalid") {
			t.Errorf("retry prompt = %q", retried)
		}
		if res.LLMCalls != tt.wantCalls || *res.Extraction != tt.wantExtraction || ran != tt.wantRan {
			t.Errorf("retry %s: calls %d, extraction %v, ran %v", tt.retry, res.LLMCalls, *res.Extraction, ran)
		}
		if !tt.wantRan && (res.Execution != nil || !strings.Contains(res.Response, "did not work") || !strings.Contains(res.Error, "valid arguments")) {
			t.Errorf("second failure: %+v", res)
		}
		if !tt.wantRan && res.Trace[1].Failure != "invalid_arguments" {
			t.Errorf("second failure's step: %+v", res.Trace[1])
		}
		if tt.wantRan && res.Trace[1].Failure != "" {
			t.Errorf("a call that ran has an error kind: %+v", res.Trace[1])
		}
		if tt.wantRan && res.Trace[1].LLMCalls != 1 {
			t.Errorf("the retry is not in the execute step: %+v", res.Trace)
		}
	}
}

// TestParallelCallsRunTogether checks that two calls in one reply run at the
// same time: each tool waits for the other to start.
func TestParallelCallsRunTogether(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	wait := func(out string) func(json.RawMessage) (string, error) {
		return func(json.RawMessage) (string, error) {
			started.Done()
			select {
			case <-both:
				return out, nil
			case <-time.After(10 * time.Second):
				return "", errors.New("the other call never started")
			}
		}
	}
	paris, tokyo := tool("paris_time", "time", "time in Paris"), tool("tokyo_time", "time", "time in Tokyo")
	paris.fn, tokyo.fn = wait("10:00"), wait("18:00")
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return calls(llm.FunctionCall{Name: "paris_time", Arguments: json.RawMessage(`{"q":"now"}`)},
				llm.FunctionCall{Name: "tokyo_time", Arguments: json.RawMessage(`{"q":"now"}`)})
		}
		return say("Paris 10:00, Tokyo 18:00.")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(paris, tokyo)}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "time in Paris and Tokyo"})
	if err != nil {
		t.Fatal(err)
	}
	if *res.Execution != true || strings.Join(res.Tools, ",") != "paris_time,tokyo_time" || res.LLMCalls != 2 {
		t.Errorf("result = %+v", res)
	}
	var nodes []string
	for _, st := range res.Trace {
		nodes = append(nodes, st.Node+":"+st.Tool+":"+st.Output)
	}
	if got := strings.Join(nodes, ","); got != "classifier::,execute:paris_time:10:00,execute:tokyo_time:18:00,synthesizer::" {
		t.Errorf("trace = %s", got)
	}
	// Side by side: one round, and each call began before the other
	// ended (each waited for the other to start).
	p, k := res.Trace[1], res.Trace[2]
	if p.Round != 1 || k.Round != 1 || p.StartMs <= 0 || p.StartMs > k.EndMs || k.StartMs > p.EndMs || p.EndMs < p.StartMs || k.EndMs < k.StartMs {
		t.Errorf("the calls' times do not overlap: %+v, %+v", p, k)
	}
}

// TestMaxSteps checks that a model that keeps calling tools is stopped:
// after MaxSteps rounds the synthesizer is asked for text, with the same
// functions offered (so the prompt still extends the previous one).
func TestMaxSteps(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if r.NoCalls {
			if !hasFunction(r, "calculator") {
				t.Errorf("the last call offers other functions than the first: %d", len(r.Functions))
			}
			return say("done")
		}
		return call("calculator", `{"q":"1"}`)
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{MaxSteps: 3})
	res, err := a.Chat(context.Background(), Request{Message: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 3 || res.Response != "done" || res.LLMCalls != 4 {
		t.Errorf("tools %v, response %q, calls %d", res.Tools, res.Response, res.LLMCalls)
	}
}

func TestAnswersStream(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if strings.Contains(userText(r), "hello") {
			return say("Hello to you.")
		}
		if isClassifier(r) {
			return call("calculator", `{"q":"1+1"}`)
		}
		return say("It is 2.")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{})
	for msg, want := range map[string]string{"hello": "Hello to you.", "1+1": "It is 2."} {
		var pieces []string
		res, err := a.Chat(context.Background(), Request{Message: msg, Stream: func(s string) { pieces = append(pieces, s) }})
		if err != nil {
			t.Fatal(err)
		}
		if len(pieces) < 2 || strings.Join(pieces, "") != want || res.Response != want {
			t.Errorf("%s: pieces %q, response %q", msg, pieces, res.Response)
		}
	}
}

func TestNoModel(t *testing.T) {
	a, _ := New(Deps{Tools: newTools()}, Config{})
	if _, err := a.Chat(context.Background(), Request{Message: "hi"}); err != llm.ErrNoModel {
		t.Errorf("err = %v, want ErrNoModel", err)
	}
}

func TestExternalToolsAreOfferedUnderAnEncodedName(t *testing.T) {
	ext := tool("weather/get_forecast", "weather", "gets the forecast")
	ext.spec.Origin = adaptbot.OriginRemote
	var got string
	ext.fn = func(args json.RawMessage) (string, error) { got = string(args); return "sunny, 21°C", nil }
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			if !hasFunction(r, "weather__get_forecast") {
				t.Errorf("functions = %v", r.Functions)
			}
			return call("weather__get_forecast", `{"q":"Paris"}`)
		}
		return say("It is sunny.")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(ext)}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "weather in Paris"})
	if err != nil {
		t.Fatal(err)
	}
	if got != `{"q":"Paris"}` || res.Path != "weather/get_forecast" || *res.Execution != true || res.Response != "It is sunny." {
		t.Errorf("called with %s, result = %+v", got, res)
	}
}

// learningFinder is a fakeFinder that records what the agent taught it.
type learningFinder struct {
	fakeFinder
	learned []string
}

func (f *learningFinder) Learn(tool, request string) {
	f.learned = append(f.learned, tool+": "+request)
}

// TestAgentTeachesTheFinder checks that the finder learns a request only
// when its tool ran without error.
func TestAgentTeachesTheFinder(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	fail := false
	calc.fn = func(json.RawMessage) (string, error) {
		if fail {
			return "", errors.New("division by zero")
		}
		return "2", nil
	}
	tools := newTools(calc)
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return call("calculator", `{"q":"x"}`)
		}
		return say("done")
	}}
	finder := &learningFinder{fakeFinder: fakeFinder{tools}}
	a, _ := New(Deps{Model: model, Tools: tools, Finder: finder}, Config{})
	for _, msg := range []string{"one plus one", "one over zero"} {
		fail = msg == "one over zero"
		if _, err := a.Chat(context.Background(), Request{Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	if len(finder.learned) != 1 || finder.learned[0] != "calculator: one plus one" {
		t.Errorf("learned %q, want only the request that ran", finder.learned)
	}
}

// TestTraceRecordsEveryStep checks the trace of a two-step message: each
// tool with its arguments and output, and the model calls of each node.
func TestTraceRecordsEveryStep(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	calc.fn = func(args json.RawMessage) (string, error) { return strings.Repeat("9", 5000), nil }
	n := 0
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		n++
		if n <= 2 {
			return call("calculator", fmt.Sprintf(`{"q":"step %d"}`, n))
		}
		return say("done")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(calc)}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "two steps"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	var out struct {
		Trace []map[string]any `json:"trace"`
		Total float64          `json:"total_ms"`
		Tools []string         `json:"tools"`
	}
	json.Unmarshal(b, &out)
	var nodes []string
	for _, st := range out.Trace {
		nodes = append(nodes, st["node"].(string))
	}
	if got := strings.Join(nodes, ","); got != "classifier,execute,synthesizer,execute,synthesizer" {
		t.Fatalf("trace = %s", got)
	}
	if out.Trace[0]["llm_calls"] != 1.0 || out.Trace[0]["prompt_tokens"] != 10.0 || out.Trace[2]["llm_calls"] != 1.0 {
		t.Errorf("model calls not in the trace: %v", out.Trace)
	}
	if ex := out.Trace[3]; ex["tool"] != "calculator" || str(ex["arguments"]) != `{"q":"step 2"}` || len(ex["output"].(string)) > 2<<10+16 {
		t.Errorf("execute step = %v", ex)
	}
	if len(out.Tools) != 2 || out.Total <= 0 {
		t.Errorf("tools %v, total_ms %v", out.Tools, out.Total)
	}
}

func str(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestFunctionNamesDecodeByWhatWasOffered checks that calls are decoded by
// the names offered this message, not by undoing the encoding: a local tool
// named "foo__bar" and the external "foo/bar" both run when called under
// the names they were offered as, and names providers refuse ('.', spaces,
// more than 64 characters) are offered valid and still reach their tools.
func TestFunctionNamesDecodeByWhatWasOffered(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5) // 100 characters
	for _, tt := range []struct {
		tools []string // the first is called
		valid bool     // the called tool's name is itself a valid function name
	}{
		{[]string{"foo__bar"}, true},
		{[]string{"foo__bar", "foo/bar"}, true},
		{[]string{"foo/bar", "foo__bar"}, false},
		{[]string{"my.server/get.thing"}, false},
		{[]string{"convert units", "convert_units"}, false},
		{[]string{long}, false},
		{[]string{long + "x", long + "y"}, false},
		{[]string{"need_tool"}, false}, // the classifier's own function's name
	} {
		var ran []string
		var ts []*fakeTool
		for _, name := range tt.tools {
			tl := tool(name, "misc", "tool "+name)
			if strings.Contains(name, "/") {
				tl.spec.Origin = adaptbot.OriginRemote
			}
			tl.fn = func(json.RawMessage) (string, error) { ran = append(ran, name); return "done", nil }
			ts = append(ts, tl)
		}
		want := tt.tools[0]
		var offered []string
		model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
			if !isClassifier(r) {
				return say("Done.")
			}
			for _, f := range r.Functions {
				offered = append(offered, f.Name)
				if !validFunctionName(f.Name) {
					t.Errorf("%v: offered %q, which providers refuse", tt.tools, f.Name)
				}
			}
			for _, f := range r.Functions {
				if f.Description == "tool "+want {
					return call(f.Name, `{"q":"x"}`)
				}
			}
			t.Errorf("%v: %s not offered: %v", tt.tools, want, offered)
			return say("?")
		}}
		a, _ := New(Deps{Model: model, Tools: newTools(ts...)}, Config{})
		res, err := a.Chat(context.Background(), Request{Message: "run it"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ran) != 1 || ran[0] != want || res.Path != want || *res.Execution != true {
			t.Errorf("%v: ran %q, path %q; want only %q (offered %q)", tt.tools, ran, res.Path, want, offered)
		}
		if len(offered) != len(tt.tools)+3 { // and build_tool, need_tool, request_tools
			t.Errorf("%v: offered %q", tt.tools, offered)
		}
		if tt.valid && !slices.Contains(offered, want) {
			t.Errorf("%v: %q not offered under its own name: %q", tt.tools, want, offered)
		}
	}
}

// validFunctionName is OpenAI's rule: ^[A-Za-z0-9_-]{1,64}$.
func validFunctionName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// TestToolStepIsTimed checks that a tool call's trace step carries the
// call's time, not zero.
func TestToolStepIsTimed(t *testing.T) {
	slow := tool("slow", "misc", "takes a while")
	slow.fn = func(json.RawMessage) (string, error) { time.Sleep(30 * time.Millisecond); return "done", nil }
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		if isClassifier(r) {
			return call("slow", `{"q":"x"}`)
		}
		return say("Done.")
	}}
	a, _ := New(Deps{Model: model, Tools: newTools(slow)}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "go slow"})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, st := range res.Trace {
		if st.Node == NodeExecute && st.Tool == "slow" {
			found = true
			if st.Ms <= 0 || st.Duration <= 0 {
				t.Errorf("execute step ms %v, duration %v; want > 0", st.Ms, st.Duration)
			}
		}
	}
	if !found {
		t.Errorf("no execute step in %+v", res.Trace)
	}
}

// TestResultTextKeepsRunesWhole: the synthesizer's prompt cuts a long
// output on a character boundary (package clip), saying it did.
func TestResultTextKeepsRunesWhole(t *testing.T) {
	// The synthesizer's prompt cuts outputs the same way.
	out := resultText("a" + strings.Repeat("é", maxOutputInPrompt))
	if !utf8.ValidString(out) || !strings.Contains(out, "[output truncated]") {
		t.Errorf("resultText cut a rune: valid %v", utf8.ValidString(out))
	}
}

// TestEveryCallExtendsThePrevious checks the one-conversation rule: each
// model call of a message sends every message and every function the
// previous call sent, in the same order, and only adds at the end — through
// a request for more tools, a tool call, a retry of invalid arguments and
// a second round.
func TestEveryCallExtendsThePrevious(t *testing.T) {
	calc := tool("calculator", "math", "evaluates arithmetic")
	calc.spec.Parameters = json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"],"additionalProperties":false}`)
	calc.fn = func(json.RawMessage) (string, error) { return "395", nil }
	var tools []*fakeTool
	for i := range 30 {
		tools = append(tools, tool(fmt.Sprintf("other_%d", i), "misc", "does something else entirely"))
	}
	tools = append(tools, calc)
	ft := newTools(tools...)
	model := &llmtest.Fake{Reply: func(r llm.Request) llm.Response {
		switch {
		case r.Force == "calculator":
			return call("calculator", `{"expression":"17*23+4"}`)
		case !hasFunction(r, "calculator"):
			return call(fnRequestTools, `{"domain":"math","operation":"evaluates arithmetic"}`)
		case isClassifier(r):
			return call("calculator", `{"expr":"17*23+4"}`) // invalid: retried
		case !ranTool(r, "calculator") || countResults(r, "calculator") < 3:
			return call("calculator", `{"expression":"395*2"}`) // a second round
		}
		return say("It is 395.")
	}}
	a, _ := New(Deps{Model: model, Tools: ft, Finder: fakeFinder{ft}}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "What is 17 * 23 + 4?", History: []llm.Message{{Role: llm.User, Content: "hi"}, {Role: llm.Assistant, Content: "Hello."}}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	retried := false
	for _, st := range res.Trace {
		retried = retried || strings.HasPrefix(st.Detail, "arguments retried")
	}
	if len(reqs) < 5 || res.Response != "It is 395." || len(res.Discovery) != 1 || !retried || len(res.Tools) != 2 {
		t.Fatalf("%d calls, response %q, discovery %v, retried %v, tools %v: the test needs discovery, a retry and two rounds", len(reqs), res.Response, res.Discovery, retried, res.Tools)
	}
	for i := 1; i < len(reqs); i++ {
		prev, now := reqs[i-1], reqs[i]
		if len(now.Messages) <= len(prev.Messages) || len(now.Functions) < len(prev.Functions) {
			t.Fatalf("call %d does not extend call %d: %d → %d messages, %d → %d functions", i, i-1, len(prev.Messages), len(now.Messages), len(prev.Functions), len(now.Functions))
		}
		for j, m := range prev.Messages {
			if got := now.Messages[j]; got.Role != m.Role || got.Content != m.Content || got.CallID != m.CallID || len(got.Calls) != len(m.Calls) {
				t.Errorf("call %d changes message %d of call %d: %+v → %+v", i, j, i-1, m, got)
			}
		}
		for j, f := range prev.Functions {
			if now.Functions[j].Name != f.Name {
				t.Errorf("call %d offers function %d as %s, call %d as %s", i, j, now.Functions[j].Name, i-1, f.Name)
			}
		}
		if now.Messages[0].Content != systemPrompt {
			t.Errorf("call %d has another system prompt", i)
		}
	}
	// Every call is answered by a result that names it.
	last := reqs[len(reqs)-1]
	ids := map[string]bool{}
	for _, m := range last.Messages {
		for _, c := range m.Calls {
			ids[c.ID] = true
		}
		if m.Role == llm.Tool && !ids[m.CallID] {
			t.Errorf("a result answers %q, which no earlier message called", m.CallID)
		}
	}
}

// countResults counts r's results of the named function's calls.
func countResults(r llm.Request, name string) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == llm.Tool && m.Name == name {
			n++
		}
	}
	return n
}
