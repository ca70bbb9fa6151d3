package provider

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/llm"
	"adaptbot/llm/llmtest/replay"
)

// TestStreamedCallsKeepArguments replays OpenRouter streams whose argument
// fragments each repeat "type":"function" (gpt-4.1), or come whole with a
// leading space (qwen3), or two calls in one chunk (gemini): every call
// keeps its arguments, and reasoning stays out of the text.
func TestStreamedCallsKeepArguments(t *testing.T) {
	for _, c := range []struct {
		file      string
		want      []string // each call's arguments, compacted
		reasoning string
	}{
		{"openrouter-gpt-4.1-stream", []string{`{"location":"Boston, MA","unit":"fahrenheit"}`}, ""},
		{"openrouter-qwen3-32b-stream", []string{`{"location":"Boston, MA","unit":"celsius"}`}, "Okay, the user is asking"},
		{"openrouter-gemini-2.5-flash-parallel-stream", []string{`{"location":"Boston, MA"}`, `{"location":"Boston, MA"}`}, ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			ex, err := replay.Load(filepath.Join("testdata", "httprr", c.file+".httprr"))
			if err != nil {
				t.Fatal(err)
			}
			srv := replay.New(t, ex...)
			m, err := New(context.Background(), Config{OpenAIBaseURL: srv.URL + "/api/v1", OpenAIKey: "k", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			text := ""
			resp, err := m.Generate(context.Background(), llm.Request{
				Messages:  []llm.Message{{Role: llm.User, Content: "weather?"}},
				Functions: []llm.Function{{Name: "getCurrentWeather"}, {Name: "getCurrentTime"}},
				Stream:    func(s string) { text += s },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Calls) != len(c.want) {
				t.Fatalf("calls = %+v, want %d", resp.Calls, len(c.want))
			}
			for i, call := range resp.Calls {
				var v any
				if err := json.Unmarshal(call.Arguments, &v); err != nil {
					t.Fatalf("call %d arguments %q: %v", i, call.Arguments, err)
				}
				got, _ := json.Marshal(v)
				if string(got) != c.want[i] || call.ID == "" || call.Name == "" {
					t.Errorf("call %d = %s %s %s, want %s", i, call.ID, call.Name, got, c.want[i])
				}
			}
			if !strings.HasPrefix(resp.Reasoning, c.reasoning) || c.reasoning != "" && strings.Contains(text+resp.Content, c.reasoning) {
				t.Errorf("reasoning %q, text %q, content %q", resp.Reasoning, text, resp.Content)
			}
		})
	}
}

// TestBaseURLs: ANTHROPIC_BASE_URL and GOOGLE_GEMINI_BASE_URL name a host
// (the API's path is added) or the endpoint itself; a relative one is an
// error that names the variable.
func TestBaseURLs(t *testing.T) {
	c := Config{AnthropicBaseURL: "http://127.0.0.1:9/", GeminiBaseURL: "https://gw.example"}
	if got, _ := c.anthropicBase(); got != "http://127.0.0.1:9/v1" {
		t.Errorf("anthropic base = %q", got)
	}
	if got, _ := c.geminiBase(); got != "https://gw.example/v1beta/openai" {
		t.Errorf("gemini base = %q", got)
	}
	c = Config{AnthropicBaseURL: "https://gw.example/anthropic/v1", GeminiBaseURL: "https://gw.example/g/openai"}
	if got, _ := c.anthropicBase(); got != "https://gw.example/anthropic/v1" {
		t.Errorf("anthropic base = %q", got)
	}
	if got, _ := c.geminiBase(); got != "https://gw.example/g/openai" {
		t.Errorf("gemini base = %q", got)
	}
	if _, err := New(context.Background(), Config{Provider: "anthropic", AnthropicKey: "k", AnthropicBaseURL: "gw.example"}); err == nil {
		t.Error("a relative ANTHROPIC_BASE_URL was taken")
	}
	if _, err := New(context.Background(), Config{GoogleKey: "k", GeminiBaseURL: "::"}); err == nil {
		t.Error("a bad GOOGLE_GEMINI_BASE_URL was taken")
	}
}
