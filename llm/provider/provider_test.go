package provider

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"adaptbot/llm"
	"adaptbot/llm/llmtest"
)

func TestPick(t *testing.T) {
	tests := []struct {
		c    Config
		want string
	}{
		{Config{}, ""},
		{Config{OpenAIKey: "k"}, "openai"},
		{Config{OpenAIBaseURL: "http://localhost:8080"}, "openai"},
		{Config{AnthropicKey: "k", GoogleKey: "g"}, "anthropic"},
		{Config{GoogleKey: "g"}, "googleai"},
		{Config{OllamaHost: "localhost:11434"}, "ollama"},
		{Config{Provider: "Ollama", OpenAIKey: "k"}, "ollama"},
	}
	for _, tt := range tests {
		if got := tt.c.Pick(); got != tt.want {
			t.Errorf("Pick(%+v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	tests := map[string]string{
		"http://localhost:8080":          "http://localhost:8080/v1",
		"http://localhost:8080/":         "http://localhost:8080/v1",
		"https://api.groq.com/openai/v1": "https://api.groq.com/openai/v1",
		"http://127.0.0.1:1234/v1/":      "http://127.0.0.1:1234/v1",
	}
	for in, want := range tests {
		if got, err := BaseURL(in); err != nil || got != want {
			t.Errorf("BaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := BaseURL("localhost:8080"); err == nil {
		t.Error("BaseURL accepted a URL without a scheme")
	}
}

func TestNoProviderIsNoModel(t *testing.T) {
	m, err := New(context.Background(), Config{})
	if m != nil || err != nil {
		t.Fatalf("New(empty) = %v, %v; want nil, nil", m, err)
	}
	if _, err := New(context.Background(), Config{Provider: "anthropic"}); err == nil {
		t.Error("anthropic without a key was accepted")
	}
}

// TestOpenAICompatible drives the real langchaingo client against a scripted
// server: plain text, a forced function call, and token usage.
func TestOpenAICompatible(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if f := r.Forced(); f != "" {
			return llmtest.Call(f, `{"answer": 42}`)
		}
		return llmtest.Say("hello there")
	})
	m, err := New(context.Background(), Config{OpenAIBaseURL: srv.URL, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "openai/scripted" {
		t.Errorf("Name = %q", m.Name())
	}
	meter := llm.NewMeter(m)
	text, err := llm.Text(context.Background(), meter, []llm.Message{{Role: llm.User, Content: "hi"}})
	if err != nil || text != "hello there" {
		t.Fatalf("Text = %q, %v", text, err)
	}
	raw, err := llm.Structured(context.Background(), meter, []llm.Message{{Role: llm.System, Content: "be exact"}, {Role: llm.User, Content: "the answer?"}},
		llm.Function{Name: "answer", Description: "Give the answer.", Parameters: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}}}`)})
	if err != nil || string(raw) != `{"answer": 42}` {
		t.Fatalf("Structured = %s, %v", raw, err)
	}
	calls, usage := meter.Counts()
	if calls != 2 || usage.PromptTokens == 0 || usage.CompletionTokens == 0 {
		t.Errorf("counts = %d, %+v", calls, usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].Forced() != "answer" || reqs[1].System() != "be exact" || reqs[0].Model != "scripted" {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestStructuredToleratesJSONInProse(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Say("Sure! Here it is:\n```json\n{\"intent\": \"BUILD\"}\n```\nAnything else?")
	})
	m, err := New(context.Background(), Config{OpenAIBaseURL: srv.BaseURL(), OpenAIKey: "x"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := llm.Structured(context.Background(), m, []llm.Message{{Role: llm.User, Content: "make a tool"}}, llm.Function{Name: "set_intent"})
	if err != nil || string(raw) != `{"intent": "BUILD"}` {
		t.Fatalf("Structured = %s, %v", raw, err)
	}
}

func TestModelFailureIsAnError(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: 500} })
	m, _ := New(context.Background(), Config{OpenAIBaseURL: srv.BaseURL(), OpenAIKey: "x"})
	if _, err := llm.Text(context.Background(), m, []llm.Message{{Role: llm.User, Content: "hi"}}); err == nil {
		t.Fatal("a 500 from the model was not an error")
	}
}

func TestEmbedder(t *testing.T) {
	if e, err := NewEmbedder(context.Background(), Config{OpenAIKey: "k"}); e != nil || err != nil {
		t.Errorf("no embedding model: %v, %v", e, err)
	}
	if _, err := NewEmbedder(context.Background(), Config{AnthropicKey: "k", EmbeddingModel: "x"}); err == nil || !strings.Contains(err.Error(), "no embedding models") {
		t.Errorf("anthropic embeddings: %v", err)
	}
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Say("") })
	e, err := NewEmbedder(context.Background(), Config{OpenAIBaseURL: srv.URL, EmbeddingModel: "scripted-embed"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.EmbedQuery(context.Background(), "convert currency")
	if err != nil || len(v) != llmtest.Dims {
		t.Fatalf("EmbedQuery = %d dims, %v", len(v), err)
	}
	vs, err := e.EmbedDocuments(context.Background(), []string{"a", "b c"})
	if err != nil || len(vs) != 2 || srv.EmbeddingCalls() != 2 {
		t.Fatalf("EmbedDocuments = %d, %v (%d calls)", len(vs), err, srv.EmbeddingCalls())
	}

	// A hung embeddings server is given up on after the per-call timeout.
	srv.SetEmbedDelay(time.Minute)
	e, _ = NewEmbedder(context.Background(), Config{OpenAIBaseURL: srv.URL, EmbeddingModel: "scripted-embed", Timeout: 100 * time.Millisecond})
	if _, err := e.EmbedQuery(context.Background(), "convert currency"); err == nil {
		t.Fatal("a hung embeddings server answered")
	}
	if !srv.WaitCancelled(1, 5*time.Second) {
		t.Error("the embedding request was not abandoned")
	}
}
