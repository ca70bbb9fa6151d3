package service

import (
	"testing"

	"adaptbot"
	"adaptbot/llm"
)

// TestSplit checks how a conversation a client sends whole is taken apart:
// the question, the history, the client's calls after it, and a build
// agreed to; and which conversations are refused, naming the field.
func TestSplit(t *testing.T) {
	u := func(s string) llm.Message { return llm.Message{Role: llm.User, Content: s} }
	a := func(s string) llm.Message { return llm.Message{Role: llm.Assistant, Content: s} }
	call := llm.Message{Role: llm.Assistant, Calls: []llm.FunctionCall{{ID: "c1", Name: "get_weather", Arguments: []byte(`{}`)}}}
	result := llm.Message{Role: llm.Tool, CallID: "c1", Content: "sunny"}
	for _, tt := range []struct {
		name      string
		msgs      []llm.Message
		message   string
		history   int
		after     int
		build     string // what is built, "" for no build
		question  string
		wantParam string // the field refused, "" to accept
	}{
		{name: "one message", msgs: []llm.Message{{Role: llm.System, Content: "be brief"}, u("hi")}, message: "hi"},
		{name: "history", msgs: []llm.Message{u("hi"), a("hello"), u("and you?")}, message: "and you?", history: 2},
		{name: "client results", msgs: []llm.Message{u("weather?"), call, result}, message: "weather?", after: 2},
		{name: "yes to the offer", msgs: []llm.Message{u("hi"), a("hello"), u("roman 4?"), a(BuildOffer), u("Yes!")},
			message: "Yes!", history: 4, build: "roman 4?", question: "roman 4?"},
		{name: "yes to something else", msgs: []llm.Message{u("roman 4?"), a("shall I tell a joke?"), u("yes")}, message: "yes", history: 2},
		{name: "/build for the question before", msgs: []llm.Message{u("roman 4?"), a("no idea"), u("/build")},
			message: "/build", history: 2, build: "roman 4?", question: "roman 4?"},
		{name: "/build with words", msgs: []llm.Message{u("/build a tool that reverses text")}, message: "/build a tool that reverses text",
			build: "a tool that reverses text"},
		{name: "/builder is no command", msgs: []llm.Message{u("/builder")}, message: "/builder"},
		{name: "empty", msgs: nil, wantParam: "messages"},
		{name: "unknown role", msgs: []llm.Message{{Role: "wizard", Content: "hi"}}, wantParam: "messages[0].role"},
		{name: "no user message", msgs: []llm.Message{{Role: llm.System, Content: "hi"}}, wantParam: "messages"},
		{name: "a result without its call", msgs: []llm.Message{u("hi"), result}, wantParam: "messages[1].tool_call_id"},
		{name: "a result of an earlier turn's call", msgs: []llm.Message{u("weather?"), call, u("thanks"), result}, wantParam: "messages[3].tool_call_id"},
		{name: "calls without results", msgs: []llm.Message{u("weather?"), call}, wantParam: "messages"},
		{name: "the assistant last", msgs: []llm.Message{u("hi"), a("hello")}, wantParam: "messages[1]"},
		{name: "an empty question", msgs: []llm.Message{u("  ")}, wantParam: "messages[0].content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := split(adaptbot.Conversation{Messages: tt.msgs})
			if tt.wantParam != "" {
				e, ok := err.(*adaptbot.Error)
				if !ok || e.Kind != adaptbot.Invalid || e.Extra["param"] != tt.wantParam {
					t.Fatalf("err = %#v, want invalid %s", err, tt.wantParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.req.Message != tt.message || len(got.req.History) != tt.history || len(got.req.After) != tt.after {
				t.Errorf("message %q, history %d, after %d", got.req.Message, len(got.req.History), len(got.req.After))
			}
			if tt.after > 0 && got.req.After[1].Name != "get_weather" {
				t.Errorf("a result does not name its function: %+v", got.req.After[1])
			}
			switch b := got.build; {
			case tt.build == "" && b != nil:
				t.Errorf("a build of %q", b.text)
			case tt.build != "" && (b == nil || b.text != tt.build || b.question.Message != tt.question):
				t.Errorf("build = %+v, want %q for %q", b, tt.build, tt.question)
			}
		})
	}
}
