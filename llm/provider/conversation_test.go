package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"adaptbot/llm"
	"adaptbot/llm/llmtest"
)

// chat is a conversation with a tool call and its result.
var chat = []llm.Message{
	{Role: llm.System, Content: "sys"},
	{Role: llm.User, Content: "What is 17 * 23 + 4?", Cache: true},
	{Role: llm.Assistant, Calls: []llm.FunctionCall{
		{ID: "call_a", Name: "calculator", Arguments: json.RawMessage(`{"expression":"17*23+4"}`)},
		{ID: "call_b", Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)},
	}},
	{Role: llm.Tool, CallID: "call_a", Name: "calculator", Content: "395"},
	{Role: llm.Tool, CallID: "call_b", Name: "calculator", Content: "2"},
}

// TestToolMessagesAreNative sends a conversation with tool calls through
// the real OpenAI client: the server receives the assistant's tool calls
// and one tool-role result per call, naming it.
func TestToolMessagesAreNative(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Say("395 and 2")))
	m, err := New(context.Background(), Config{Provider: "openai", OpenAIBaseURL: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	fn := llm.Function{Name: "calculator", Parameters: json.RawMessage(`{"type":"object"}`)}
	if _, err := m.Generate(context.Background(), llm.Request{Messages: chat, Functions: []llm.Function{fn}}); err != nil {
		t.Fatal(err)
	}
	req := srv.Requests()[0]
	if len(req.Messages) != 5 {
		t.Fatalf("%d messages, want 5: %+v", len(req.Messages), req.Messages)
	}
	if calls := req.Messages[2].ToolCalls; len(calls) != 2 || calls[0].ID != "call_a" || calls[1].Function.Name != "calculator" {
		t.Errorf("assistant tool calls = %+v", calls)
	}
	res := req.Results()
	if len(res) != 2 || res[0].CallID != "call_a" || res[0].Text != "395" || res[1].Name != "calculator" {
		t.Errorf("results = %+v", res)
	}
}

// TestAnthropicAndOllamaShapes checks what this langchaingo's clients can
// carry: Anthropic one call per assistant message and a cache mark on the
// user's message; Ollama (our client) native calls.
func TestAnthropicAndOllamaShapes(t *testing.T) {
	msgs, _ := request("anthropic", llm.Request{Messages: chat})
	var roles []llms.ChatMessageType
	for _, m := range msgs {
		roles = append(roles, m.Role)
		if len(m.Parts) != 1 {
			t.Errorf("anthropic message with %d parts: its client reads only the first", len(m.Parts))
		}
	}
	want := []llms.ChatMessageType{llms.ChatMessageTypeSystem, llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI, llms.ChatMessageTypeAI, llms.ChatMessageTypeTool, llms.ChatMessageTypeTool}
	if len(roles) != len(want) {
		t.Fatalf("anthropic roles = %v, want %v", roles, want)
	}
	for i := range want {
		if roles[i] != want[i] {
			t.Errorf("anthropic roles = %v, want %v", roles, want)
			break
		}
	}
	if _, ok := msgs[1].Parts[0].(llms.CachedContent); !ok {
		t.Errorf("the user's message is not marked for Anthropic's cache: %T", msgs[1].Parts[0])
	}
	if tc, ok := msgs[3].Parts[0].(llms.ToolCall); !ok || tc.ID != "call_b" {
		t.Errorf("second call = %#v", msgs[3].Parts[0])
	}
	// Ollama's client is ours and carries calls and results natively.
	msgs, _ = request("ollama", llm.Request{Messages: chat})
	om, err := ollamaMessageOf(msgs[2])
	if err != nil || len(om) != 1 || len(om[0].ToolCalls) == 0 || string(om[0].ToolCalls[0].Function.Arguments) == "" {
		t.Errorf("ollama assistant message = %+v, %v", om, err)
	}
	msgs, _ = request("openai", llm.Request{Messages: chat})
	if _, ok := msgs[1].Parts[0].(llms.TextContent); !ok {
		t.Errorf("openai gets a cache mark it does not take: %T", msgs[1].Parts[0])
	}
}
