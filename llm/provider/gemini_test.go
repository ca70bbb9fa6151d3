package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"adaptbot/llm"
)

// TestGeminiSpeaksOpenAICompatible: with GOOGLE_API_KEY, chat and
// embeddings go to Google's OpenAI-compatible endpoint with the key as a
// bearer token, the default Gemini model, and the same retries and failure
// kinds as any HTTP provider.
func TestGeminiSpeaksOpenAICompatible(t *testing.T) {
	var mu sync.Mutex
	var seen []string // method path auth model
	overloaded := 1   // the first chat call gets a 503
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model string `json:"model"`
		}
		json.Unmarshal(body, &req)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+req.Model)
		busy := r.URL.Path == "/chat/completions" && overloaded > 0
		if busy {
			overloaded--
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case busy:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"message": "overloaded"}}`)
		case r.URL.Path == "/chat/completions":
			io.WriteString(w, `{"id": "1", "object": "chat.completion", "model": "gemini-2.0-flash",
				"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello from Gemini."}}],
				"usage": {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}}`)
		case r.URL.Path == "/embeddings":
			io.WriteString(w, `{"object": "list", "model": "text-embedding-004", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	saved := geminiBaseURL
	geminiBaseURL = srv.URL
	defer func() { geminiBaseURL = saved }()

	c := Config{GoogleKey: "g-key", EmbeddingModel: "text-embedding-004", Timeout: 5 * time.Second, Retries: 2}
	m, err := New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "googleai/gemini-2.0-flash" {
		t.Errorf("name = %q", m.Name())
	}
	resp, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "Hello from Gemini." || resp.Usage.PromptTokens != 7 {
		t.Errorf("response = %+v", resp)
	}
	e, err := NewEmbedder(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.EmbedDocuments(context.Background(), []string{"a tool"})
	if err != nil || len(vecs) != 1 || len(vecs[0]) != 2 {
		t.Fatalf("embeddings = %v, %v", vecs, err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"POST /chat/completions Bearer g-key gemini-2.0-flash", // 503, tried again
		"POST /chat/completions Bearer g-key gemini-2.0-flash",
		"POST /embeddings Bearer g-key text-embedding-004",
	}
	if len(seen) != len(want) {
		t.Fatalf("requests = %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, seen[i], want[i])
		}
	}
}

// TestGeminiOverloadedIsAKind: a Gemini that stays overloaded is reported
// as overloaded, like any provider, after the retries.
func TestGeminiOverloadedIsAKind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	saved := geminiBaseURL
	geminiBaseURL = srv.URL
	defer func() { geminiBaseURL = saved }()
	m, err := New(context.Background(), Config{GoogleKey: "g-key", Timeout: 5 * time.Second, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.Overloaded || le.Provider != "googleai" {
		t.Errorf("err = %v, want an overloaded googleai error", err)
	}
}
