// Package llmtest runs a scripted OpenAI-compatible chat server on loopback,
// so tests drive the real langchaingo client over real HTTP without a model
// and without leaving the machine.
//
// A script answers each request with a Reply. Besides text and function
// calls, a Reply can misbehave on purpose: fail with a status and headers
// (Fail, RateLimited), wait (Delay), never answer (Hang), or drop the
// connection (Cut). Requests with "stream": true are answered as
// chat.completion.chunk server-sent events, text and function calls alike.
// Queue scripts "these replies first, then that"; Cancelled, WaitCancelled,
// InFlight and WaitIdle let a test see that a client gave up. A request's
// earlier tool calls and tool-role results are read (Results), and Prompt
// and Uncached measure what a prompt cache could serve between two calls of
// a chat. Fake is a model in the process for tests that need no HTTP.
package llmtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	// Stream is set when the client asks for server-sent events.
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// Message is one message of a Request. Content may arrive as a string or as
// parts; Text gives the text either way. An assistant message may carry the
// model's earlier tool calls, and a "tool" message answers one of them
// (ToolCallID).
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

// ToolCall is a tool call an assistant message carries.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
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

// Last returns the request's last message.
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Results returns the tool results after the last user message, in order,
// each with the name of the function whose call it answers: what the model
// is to answer from.
func (r Request) Results() []Result {
	names := map[string]string{}
	var out []Result
	for _, m := range r.Messages {
		switch m.Role {
		case "user":
			out = nil
		case "assistant":
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Function.Name
			}
		case "tool":
			out = append(out, Result{Name: names[m.ToolCallID], CallID: m.ToolCallID, Text: m.Text()})
		}
	}
	return out
}

// Result is a tool result in a request.
type Result struct {
	Name, CallID, Text string
}

// Prompt is the request's prompt in the order providers lay it out for
// their caches: the tools (name, description, schema), then every message
// (role, text, tool calls, the call a result answers). Two calls of a chat
// share what a prompt cache can serve: the common beginning of their
// Prompts.
func (r Request) Prompt() string {
	var b strings.Builder
	for _, t := range r.Tools {
		fmt.Fprintf(&b, "tool %s: %s %s\n", t.Function.Name, t.Function.Description, t.Function.Parameters)
	}
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "%s: %s", m.Role, m.Text())
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " [call %s %s(%s)]", c.ID, c.Function.Name, c.Function.Arguments)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " [result of %s]", m.ToolCallID)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Tokens estimates a text's tokens at four bytes a token (no tokenizer is
// available offline; the usual rule of thumb for English).
func Tokens(text string) int { return (len(text) + 3) / 4 }

// Uncached returns the tokens of the prompt now that a prompt cache cannot
// serve: what follows the beginning it shares with prev, the previous call
// of the same chat ("" for a chat's first call).
func Uncached(prev, now string) int {
	n := 0
	for n < len(prev) && n < len(now) && prev[n] == now[n] {
		n++
	}
	return Tokens(now[n:])
}

// Reply is what the scripted model answers. The zero Reply is an empty
// text answer; the fields below script misbehaviour on purpose.
type Reply struct {
	// Content is plain text. A streamed reply sends it in Pieces, or word by
	// word when Pieces is empty.
	Content string
	// Pieces, if set, are the text pieces of a streamed reply (and, joined,
	// the Content of an unstreamed one when Content is empty).
	Pieces []string
	// Call, if set, is a function call with Args as its JSON arguments.
	Call string
	Args string
	// Status, if not 0 or 200, fails the request with that HTTP status and
	// an OpenAI-style error body.
	Status int
	// Header holds extra response headers, such as Retry-After.
	Header http.Header
	// Delay waits this long before answering (cut short when the client
	// leaves, which counts as a cancelled request).
	Delay time.Duration
	// Hang never answers: the handler waits until the request's context is
	// done and counts it as cancelled.
	Hang bool
	// Cut drops the connection: a streamed reply after CutAfter events have
	// been sent (0 cuts before the response headers), an unstreamed one
	// halfway through its body (or before the headers when CutAfter is -1).
	Cut      bool
	CutAfter int
	// Interval is the pause between the events of a streamed reply.
	Interval time.Duration
}

// Say is a text reply.
func Say(text string) Reply { return Reply{Content: text} }

// Call is a function-call reply.
func Call(name, args string) Reply { return Reply{Call: name, Args: args} }

// Fail is a failure with the given HTTP status.
func Fail(status int) Reply { return Reply{Status: status} }

// RateLimited is a 429 with the given Retry-After header ("" for none).
func RateLimited(retryAfter string) Reply {
	r := Reply{Status: http.StatusTooManyRequests}
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

// Hang is a reply that never comes.
func Hang() Reply { return Reply{Hang: true} }

// Always is a script that answers every request with reply.
func Always(reply Reply) func(Request) Reply {
	return func(Request) Reply { return reply }
}

// Queue is a script that answers the first requests with replies, in order,
// and every later one with then (Always(Say("")) when then is nil). It is
// safe for concurrent requests.
func Queue(then func(Request) Reply, replies ...Reply) func(Request) Reply {
	var mu sync.Mutex
	if then == nil {
		then = Always(Say(""))
	}
	return func(r Request) Reply {
		mu.Lock()
		if len(replies) > 0 {
			next := replies[0]
			replies = replies[1:]
			mu.Unlock()
			return next
		}
		mu.Unlock()
		return then(r)
	}
}

// Server is a scripted OpenAI-compatible server.
type Server struct {
	*httptest.Server
	quit chan struct{}

	mu         sync.Mutex
	script     func(Request) Reply
	requests   []Request
	embeddings int
	embedDelay time.Duration
	inFlight   int
	cancelled  int
	changed    chan struct{} // closed and replaced whenever a counter moves
}

// New starts a server whose model answers with script. It stops with the
// test; requests still hanging then are released.
func New(t testing.TB, script func(Request) Reply) *Server {
	s := Start(script)
	t.Cleanup(s.Stop)
	return s
}

// Start starts a server outside a test (an evaluation, a benchmark
// command); Stop stops it.
func Start(script func(Request) Reply) *Server {
	s := &Server{script: script, quit: make(chan struct{}), changed: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Stop releases requests still hanging and closes the server.
func (s *Server) Stop() {
	close(s.quit)
	s.Close()
}

// BaseURL is the value for OPENAI_BASE_URL.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// SetScript replaces the script.
func (s *Server) SetScript(script func(Request) Reply) {
	s.mu.Lock()
	s.script = script
	s.mu.Unlock()
}

// Requests returns the chat requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// InFlight counts the chat requests being answered right now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Cancelled counts the chat requests whose client went away (its context
// was done) before the server had finished answering.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// WaitCancelled waits up to timeout until at least n requests have been
// cancelled, and reports whether they were.
func (s *Server) WaitCancelled(n int, timeout time.Duration) bool {
	return s.wait(timeout, func() bool { return s.cancelled >= n })
}

// WaitIdle waits up to timeout until no chat request is being answered, and
// reports whether none is.
func (s *Server) WaitIdle(timeout time.Duration) bool {
	return s.wait(timeout, func() bool { return s.inFlight == 0 })
}

func (s *Server) wait(timeout time.Duration, done func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, changed := done(), s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// update changes the counters under the lock and wakes the waiters.
func (s *Server) update(f func()) {
	s.mu.Lock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// pause waits d, or until the client leaves (counted, false) or the server
// stops (false).
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	var after <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-after:
		return true
	case <-r.Context().Done():
		s.update(func() { s.cancelled++ })
		return false
	case <-s.quit:
		return false
	}
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
	var script func(Request) Reply
	s.update(func() {
		s.requests = append(s.requests, req)
		s.inFlight++
		script = s.script
	})
	defer s.update(func() { s.inFlight-- })
	reply := script(req)
	if reply.Hang {
		s.pause(r, -1)
		return
	}
	if reply.Delay > 0 && !s.pause(r, reply.Delay) {
		return
	}
	for k, vs := range reply.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error"}}`, reply.Status)
		return
	}
	if reply.Content == "" && len(reply.Pieces) > 0 {
		reply.Content = strings.Join(reply.Pieces, "")
	}
	if req.Stream {
		s.stream(w, r, req, reply)
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	finish := "stop"
	if reply.Call != "" {
		finish = "tool_calls"
		msg["tool_calls"] = []map[string]any{{
			"id": callID(req), "type": "function",
			"function": map[string]any{"name": reply.Call, "arguments": reply.Args},
		}}
	}
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   usage(req, reply),
	})
	if reply.Cut && reply.CutAfter < 0 {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	if reply.Cut {
		// Promise the whole body, send half, and drop the connection: the
		// client sees an unexpected EOF while reading.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	w.Write(body)
}

// callID names a reply's call after the request's length, so that the
// calls of one chat get distinct IDs, the same ones every run.
func callID(req Request) string { return fmt.Sprintf("call_%d", len(req.Messages)) }

// usage counts a request's and a reply's tokens the scripted way.
func usage(req Request, reply Reply) map[string]any {
	prompt := 0
	for _, m := range req.Messages {
		prompt += words(m.Text())
	}
	for _, t := range req.Tools {
		prompt += words(string(t.Function.Parameters)) + words(t.Function.Description)
	}
	completion := words(reply.Content) + words(reply.Args)
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

// stream answers a "stream": true request with chat.completion.chunk
// server-sent events, the way OpenAI does: a role delta, the text pieces,
// the function call (name first, then its arguments in pieces), a finish
// delta, the usage when asked for, and [DONE].
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, reply Reply) {
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	events := []map[string]any{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	pieces := reply.Pieces
	if len(pieces) == 0 && reply.Content != "" {
		pieces = strings.SplitAfter(reply.Content, " ")
	}
	for _, p := range pieces {
		events = append(events, chunk(map[string]any{"content": p}, nil))
	}
	finish := "stop"
	if reply.Call != "" {
		finish = "tool_calls"
		events = append(events, chunk(map[string]any{"tool_calls": []map[string]any{{
			"index": 0, "id": callID(req), "type": "function",
			"function": map[string]any{"name": reply.Call, "arguments": ""},
		}}}, nil))
		args := reply.Args
		for len(args) > 0 {
			n := min(len(args), 8)
			events = append(events, chunk(map[string]any{"tool_calls": []map[string]any{{
				"index": 0, "function": map[string]any{"arguments": args[:n]},
			}}}, nil))
			args = args[n:]
		}
	}
	events = append(events, chunk(map[string]any{}, finish))
	if req.StreamOptions.IncludeUsage {
		events = append(events, map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
			"choices": []any{}, "usage": usage(req, reply),
		})
	}
	if reply.Cut && reply.CutAfter <= 0 {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher := w.(http.Flusher)
	for i, ev := range events {
		if reply.Cut && i == reply.CutAfter {
			panic(http.ErrAbortHandler)
		}
		if i > 0 && reply.Interval > 0 && !s.pause(r, reply.Interval) {
			return
		}
		data, _ := json.Marshal(ev)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			s.update(func() { s.cancelled++ })
			return
		}
		flusher.Flush()
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flusher.Flush()
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

// SetEmbedDelay makes embedding requests wait d before they are answered
// (cut short, and counted as cancelled, when the client leaves).
func (s *Server) SetEmbedDelay(d time.Duration) {
	s.mu.Lock()
	s.embedDelay = d
	s.mu.Unlock()
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
	delay := s.embedDelay
	s.mu.Unlock()
	if delay > 0 && !s.pause(r, delay) {
		return
	}
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
