package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// fakeModel answers each request with the function its test scripts.
type fakeModel struct {
	mu       sync.Mutex
	generate func(r llm.Request) llm.Response
	requests []llm.Request
}

var _ llm.Model = (*fakeModel)(nil)

func (f *fakeModel) Name() string { return "fake" }

func (f *fakeModel) Generate(_ context.Context, r llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, r)
	f.mu.Unlock()
	return f.generate(r), nil
}

func call(name, args string) llm.Response {
	return llm.Response{Calls: []llm.FunctionCall{{Name: name, Arguments: json.RawMessage(args)}}, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}
}

// fakeTools is a registry of n synthetic tools plus any given ones.
type fakeTools struct{ tools map[string]registry.Tool }

var _ Tools = (*fakeTools)(nil)

func (f *fakeTools) Serving() []registry.Tool {
	var out []registry.Tool
	for _, t := range f.tools {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (f *fakeTools) Len() int { return len(f.tools) }

func (f *fakeTools) Tool(name string) (registry.Tool, bool) {
	t, ok := f.tools[name]
	return t, ok
}

func newTools(ts ...registry.Tool) *fakeTools {
	f := &fakeTools{tools: map[string]registry.Tool{}}
	for _, t := range ts {
		f.tools[t.Name] = t
	}
	return f
}

func tool(name, category, desc string) registry.Tool {
	return registry.Tool{Entry: registry.Entry{Name: name, Category: category, Description: desc,
		Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)},
		Code: []byte("package " + name)}
}

// filler returns n tools that no test query matches.
func filler(n int) []registry.Tool {
	out := make([]registry.Tool, n)
	for i := range out {
		out[i] = tool(fmt.Sprintf("tool_%02d", i), "misc", fmt.Sprintf("does job %d", i))
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
	if len(list) != 6 || list[0].Name != "weather_forecast" {
		t.Errorf("small catalog: router's pick not first: %v", names(list))
	}

	large := newTools(append(filler(10), weather)...)
	a, _ = New(Deps{Tools: large, Finder: fakeFinder{large}}, Config{})
	if list, whole := a.shortlist(context.Background(), "how warm is it outside"); len(list) != 0 || whole {
		t.Errorf("large catalog, unmatched request: %v, whole %v; want none, not whole", names(list), whole)
	}
	if list, whole := a.shortlist(context.Background(), "forecast please"); len(list) != 1 || list[0].Name != "weather_forecast" || whole {
		t.Errorf("large catalog: %v, whole %v; want the router's pick alone", names(list), whole)
	}
}

func names(ts []registry.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// fakeFinder finds tools whose description contains a word of the query.
type fakeFinder struct{ tools *fakeTools }

func (f fakeFinder) Find(_ context.Context, query string, k int) []string {
	var out []string
	for _, t := range f.tools.Serving() {
		for _, w := range strings.Fields(strings.ToLower(query)) {
			if strings.Contains(strings.ToLower(t.Description), w) {
				out = append(out, t.Name)
				break
			}
		}
	}
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// fakeRunner returns what its test scripts.
type fakeRunner struct {
	run func(c sandbox.Call) (sandbox.Result, error)
}

var _ Runner = (*fakeRunner)(nil)

func (f *fakeRunner) Run(_ context.Context, c sandbox.Call) (sandbox.Result, error) {
	return f.run(c)
}

func TestDiscoveryAddsToolsAndIsBounded(t *testing.T) {
	// Three tools are more than twice the shortlist of one, so the
	// classifier starts from the router's pick rather than all of them.
	tools := newTools(tool("greeter", "text", "says hello"), tool("fx_rates", "finance", "converts currency amounts"),
		tool("notes", "text", "keeps notes"))
	var rounds int
	model := &fakeModel{generate: func(r llm.Request) llm.Response {
		switch r.Force {
		case "set_intent":
			return call(r.Force, `{"intent":"CHAT"}`)
		case "route":
			rounds++
			sys := r.Messages[0].Content
			switch {
			case rounds == 1:
				if strings.Contains(sys, "fx_rates") {
					t.Errorf("fx_rates was in the first shortlist")
				}
				return call("route", `{"decision":"request_tools","tool_request":{"domain":"astronomy","operation":"moon phase"}}`)
			case rounds == 2:
				if last := r.Messages[len(r.Messages)-1].Content; !strings.Contains(last, "No more tools found") {
					t.Errorf("empty discovery reply = %q", last)
				}
				return call("route", `{"decision":"request_tools","tool_request":{"domain":"finance","operation":"currency"}}`)
			default:
				if !strings.Contains(sys, "fx_rates") {
					t.Errorf("fx_rates not offered after discovery:\n%s", sys)
				}
				return call("route", `{"decision":"fx_rates"}`)
			}
		case "fx_rates":
			return call("fx_rates", `{"q":"10 USD in EUR"}`)
		}
		return llm.Response{Content: "10 USD is 9.2 EUR."}
	}}
	runner := &fakeRunner{run: func(c sandbox.Call) (sandbox.Result, error) {
		return sandbox.Result{Output: "9.2 EUR"}, nil
	}}
	a, err := New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}, Runner: runner}, Config{Shortlist: 1})
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
	if res.LLMCalls != 6 || res.Usage.PromptTokens != 50 {
		t.Errorf("calls, usage = %d, %+v", res.LLMCalls, res.Usage)
	}

	// A model that keeps asking is cut off after MaxDiscovery requests.
	rounds = 0
	model.generate = func(r llm.Request) llm.Response {
		switch r.Force {
		case "set_intent":
			return call(r.Force, `{"intent":"CHAT"}`)
		case "route":
			rounds++
			if strings.Contains(r.Messages[0].Content, "request_tools") {
				return call("route", `{"decision":"request_tools","tool_request":{"domain":"x","operation":"y"}}`)
			}
			return call("route", `{"decision":"need_tool"}`)
		}
		return llm.Response{}
	}
	tools = newTools(filler(11)...) // more than twice the default shortlist of 5
	a, _ = New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}, Runner: runner}, Config{MaxDiscovery: 2})
	res, err = a.Chat(context.Background(), Request{Message: "something"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Discovery) != 2 || rounds != 3 || res.Path != PathNeedTool {
		t.Errorf("discovery = %d, rounds = %d, path = %s", len(res.Discovery), rounds, res.Path)
	}
}

func TestClassifierDecisions(t *testing.T) {
	tools := newTools(tool("calculator", "math", "evaluates arithmetic"))
	tests := []struct {
		decision, wantPath string
		wantNeedTool       bool
	}{
		{"general", PathGeneral, false},
		{"need_tool", PathNeedTool, true},
		{"calculator", "calculator", false},
		{"made_up_tool", PathNeedTool, true}, // a tool that does not exist is no tool
	}
	for _, tt := range tests {
		model := &fakeModel{generate: func(r llm.Request) llm.Response {
			switch r.Force {
			case "set_intent":
				return call(r.Force, `{"intent":"CHAT"}`)
			case "route":
				return call("route", fmt.Sprintf(`{"decision":%q}`, tt.decision))
			case "calculator":
				return call("calculator", `{"q":"1+1"}`)
			}
			return llm.Response{Content: "ok"}
		}}
		runner := &fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) { return sandbox.Result{Output: "2"}, nil }}
		a, _ := New(Deps{Model: model, Tools: tools, Finder: fakeFinder{tools}, Runner: runner}, Config{})
		res, err := a.Chat(context.Background(), Request{Message: "1+1"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Path != tt.wantPath || res.NeedTool != tt.wantNeedTool {
			t.Errorf("decision %q: path %q need_tool %v", tt.decision, res.Path, res.NeedTool)
		}
	}
}

// calculatorModel is a model that sends every chat message to the calculator
// with args, and answers anything else with other.
func calculatorModel(args string, other func() llm.Response) *fakeModel {
	return &fakeModel{generate: func(r llm.Request) llm.Response {
		switch r.Force {
		case "set_intent":
			return call(r.Force, `{"intent":"CHAT"}`)
		case "route":
			return call("route", `{"decision":"calculator"}`)
		case "calculator":
			return call("calculator", args)
		}
		return other()
	}}
}

func TestToolErrorIsReportedNotDressedUp(t *testing.T) {
	tools := newTools(tool("calculator", "math", "evaluates arithmetic"))
	model := calculatorModel(`{"q":"1/0"}`, func() llm.Response {
		t.Error("the synthesizer asked the model to phrase a failure")
		return llm.Response{Content: "All good!"}
	})
	runner := &fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) {
		return sandbox.Result{}, &sandbox.Error{Tool: "calculator", Kind: sandbox.KindTool, Msg: "division by zero"}
	}}
	a, _ := New(Deps{Model: model, Tools: tools, Runner: runner}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "1/0"})
	if err != nil {
		t.Fatal(err)
	}
	if *res.Extraction != true || *res.Execution != false || !strings.Contains(res.Response, "division by zero") {
		t.Errorf("result = %+v", res)
	}
}

func TestBuildIntentWithoutBuilder(t *testing.T) {
	model := &fakeModel{generate: func(r llm.Request) llm.Response { return call("set_intent", `{"intent":"BUILD"}`) }}
	a, _ := New(Deps{Model: model, Tools: newTools()}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "make a tool that flips coins"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Intent != IntentBuild || !strings.Contains(res.Response, "not available") {
		t.Errorf("result = %+v", res)
	}
}

func TestNoModel(t *testing.T) {
	a, _ := New(Deps{Tools: newTools()}, Config{})
	if _, err := a.Chat(context.Background(), Request{Message: "hi"}); err != llm.ErrNoModel {
		t.Errorf("err = %v, want ErrNoModel", err)
	}
}

// fakeRemote records the external calls the agent makes.
type fakeRemote struct{ name, args string }

var _ Remote = (*fakeRemote)(nil)

func (f *fakeRemote) CallTool(_ context.Context, name string, args json.RawMessage) (string, error) {
	f.name, f.args = name, string(args)
	return "sunny, 21°C", nil
}

func TestExternalToolsGoThroughRemote(t *testing.T) {
	ext := tool("weather/get_forecast", "weather", "gets the forecast")
	ext.Code = nil // an MCP server's tool: no source here
	tools := newTools(ext)
	var extractedAs string
	model := &fakeModel{generate: func(r llm.Request) llm.Response {
		switch r.Force {
		case "set_intent":
			return call(r.Force, `{"intent":"CHAT"}`)
		case "route":
			return call("route", `{"decision":"weather/get_forecast"}`)
		case "":
			return llm.Response{Content: "It is sunny."}
		}
		extractedAs = r.Force
		return call(r.Force, `{"q":"Paris"}`)
	}}
	remote := &fakeRemote{}
	a, _ := New(Deps{Model: model, Tools: tools, Runner: &fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) {
		t.Error("an external tool ran in the sandbox")
		return sandbox.Result{}, nil
	}}, Remote: remote}, Config{})
	res, err := a.Chat(context.Background(), Request{Message: "weather in Paris"})
	if err != nil {
		t.Fatal(err)
	}
	if extractedAs != "weather__get_forecast" || remote.name != "weather/get_forecast" || remote.args != `{"q":"Paris"}` {
		t.Errorf("extracted as %q, called %q with %s", extractedAs, remote.name, remote.args)
	}
	if res.Path != "weather/get_forecast" || *res.Execution != true || res.Response != "It is sunny." {
		t.Errorf("result = %+v", res)
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
	tools := newTools(tool("calculator", "math", "evaluates arithmetic"))
	model := calculatorModel(`{"q":"x"}`, func() llm.Response { return llm.Response{Content: "done"} })
	fail := false
	runner := &fakeRunner{run: func(sandbox.Call) (sandbox.Result, error) {
		if fail {
			return sandbox.Result{}, &sandbox.Error{Tool: "calculator", Kind: sandbox.KindTool, Msg: "division by zero"}
		}
		return sandbox.Result{Output: "2"}, nil
	}}
	finder := &learningFinder{fakeFinder: fakeFinder{tools}}
	a, _ := New(Deps{Model: model, Tools: tools, Finder: finder, Runner: runner}, Config{})
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

// fakeBuilder records the builds it was asked for.
type fakeBuilder struct{ builds []string }

var _ Builder = (*fakeBuilder)(nil)

func (b *fakeBuilder) Build(ctx context.Context, request string, progress func(BuildStep)) (*BuildResult, error) {
	b.builds = append(b.builds, request)
	return &BuildResult{Action: "delete", Tool: "calculator", OK: true, Summary: "Deleted calculator."}, nil
}

// TestBuildNeedsChangesAllowed checks that a BUILD message builds nothing
// unless the caller may change tools, and that a context that does not say
// is refused.
func TestBuildNeedsChangesAllowed(t *testing.T) {
	model := &fakeModel{generate: func(r llm.Request) llm.Response { return call("set_intent", `{"intent":"BUILD"}`) }}
	b := &fakeBuilder{}
	a, _ := New(Deps{Model: model, Tools: newTools(), Builder: b}, Config{})
	for _, ctx := range []context.Context{context.Background(), AllowChanges(context.Background(), false)} {
		res, err := a.Chat(ctx, Request{Message: "delete the calculator tool"})
		if !errors.Is(err, ErrForbidden) || res == nil || res.Intent != IntentBuild || !strings.Contains(res.Response, "admin token") {
			t.Errorf("chat = %+v, %v; want ErrForbidden with a reply saying so", res, err)
		}
	}
	if len(b.builds) != 0 {
		t.Fatalf("built %v without permission", b.builds)
	}
	res, err := a.Chat(AllowChanges(context.Background(), true), Request{Message: "delete the calculator tool"})
	if err != nil || res.ToolBuild == nil || !res.ToolBuild.OK || len(b.builds) != 1 {
		t.Errorf("allowed chat = %+v, %v (builds %v)", res, err, b.builds)
	}
}
