// Package llmtest runs a scripted OpenAI-compatible chat server on loopback,
// so tests drive the real langchaingo client over real HTTP without a model
// and without leaving the machine.
package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is a chat completion request as the server received it.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// Message is one message of a Request. Content may arrive as a string or as
// parts; Text gives the text either way.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Text returns the message's text.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// Forced returns the name of the function the request forces, or "".
func (r Request) Forced() string {
	var tc struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(r.ToolChoice, &tc) == nil && tc.Function.Name != "" {
		return tc.Function.Name
	}
	if len(r.Tools) == 1 {
		return r.Tools[0].Function.Name
	}
	return ""
}

// Schema returns the parameters schema of the named function in the request.
func (r Request) Schema(name string) json.RawMessage {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return t.Function.Parameters
		}
	}
	return nil
}

// System returns the text of the first system message.
func (r Request) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return m.Text()
		}
	}
	return ""
}

// LastUser returns the text of the last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text()
		}
	}
	return ""
}

// Reply is what the scripted model answers.
type Reply struct {
	// Content is plain text.
	Content string
	// Call, if set, is a function call with Args as its JSON arguments.
	Call string
	Args string
	// Status, if not 0 or 200, fails the request with that HTTP status.
	Status int
}

// Say is a text reply.
func Say(text string) Reply { return Reply{Content: text} }

// Call is a function-call reply.
func Call(name, args string) Reply { return Reply{Call: name, Args: args} }

// Server is a scripted OpenAI-compatible server.
type Server struct {
	*httptest.Server
	mu         sync.Mutex
	script     func(Request) Reply
	requests   []Request
	embeddings int
}

// New starts a server whose model answers with script. It stops with the test.
func New(t testing.TB, script func(Request) Reply) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// BaseURL is the value for OPENAI_BASE_URL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// SetScript replaces the script.
func (s *Server) SetScript(script func(Request) Reply) {
	s.mu.Lock()
	s.script = script
	s.mu.Unlock()
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/embeddings" {
		s.embed(w, r)
		return
	}
	if r.URL.Path == "/v1/models" {
		serveModels(w)
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	script := s.script
	s.mu.Unlock()
	reply := script(req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error"}}`, reply.Status)
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	finish := "stop"
	if reply.Call != "" {
		finish = "tool_calls"
		msg["tool_calls"] = []map[string]any{{
			"id": "call_1", "type": "function",
			"function": map[string]any{"name": reply.Call, "arguments": reply.Args},
		}}
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += words(m.Text())
	}
	for _, t := range req.Tools {
		prompt += words(string(t.Function.Parameters)) + words(t.Function.Description)
	}
	completion := words(reply.Content) + words(reply.Args)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
	})
}

// words is the server's stand-in for a tokenizer: good enough to see token
// counts move, not to bill by.
func words(s string) int { return len(strings.Fields(s)) }

// EmbeddingCalls counts the embedding requests received so far.
func (s *Server) EmbeddingCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embeddings
}

// Dims is the size of the scripted embeddings.
const Dims = 64

// embed answers an embeddings request with a bag of hashed words: texts that
// share words get similar vectors, which is all a test needs.
func (s *Server) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.embeddings++
	s.mu.Unlock()
	data := make([]map[string]any, len(req.Input))
	for i, text := range req.Input {
		v := make([]float32, Dims)
		for _, word := range strings.Fields(strings.ToLower(text)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(word, ".,;:!?")))
			v[h.Sum32()%Dims]++
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "scripted-embed",
		"usage": map[string]any{"prompt_tokens": 1, "total_tokens": 1}})
}

// serveModels answers GET /v1/models as OpenAI-compatible servers do, so a
// check that the model answers (the server's model list) works against the
// scripted server.
func serveModels(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted","object":"model","owned_by":"llmtest"}]}`)
}
