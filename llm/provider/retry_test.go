package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"adaptbot/llm"
	"adaptbot/llm/llmtest"
)

// scripted returns a model on the openai client against srv, with a short
// per-call timeout and the given retries.
func scripted(t *testing.T, srv *llmtest.Server, retries int) llm.Model {
	t.Helper()
	m, err := New(context.Background(), Config{OpenAIBaseURL: srv.URL, Model: "scripted", Timeout: 200 * time.Millisecond, Retries: retries})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var hi = llm.Request{Messages: []llm.Message{{Role: llm.User, Content: "hi"}}}

func TestRetriedThenOK(t *testing.T) {
	tests := map[string]llmtest.Reply{
		"429 with Retry-After":  llmtest.RateLimited("1"),
		"500":                   llmtest.Fail(500),
		"503":                   llmtest.Fail(503),
		"cut before any output": {Cut: true, CutAfter: -1},
		"cut body":              {Content: "lost", Cut: true},
		"hang":                  llmtest.Hang(),
	}
	for name, first := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Queue(llmtest.Always(llmtest.Say("ok")), first))
			resp, err := scripted(t, srv, 2).Generate(context.Background(), hi)
			if err != nil || resp.Content != "ok" {
				t.Fatalf("Generate = %q, %v", resp.Content, err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

func TestAlwaysOverloaded(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.RateLimited("1")))
	_, err := scripted(t, srv, 1).Generate(context.Background(), hi)
	e, ok := llm.AsError(err)
	if !ok || e.Kind != llm.Overloaded {
		t.Fatalf("err = %v, want an Overloaded llm.Error", err)
	}
	if e.RetryAfter < time.Second || e.RetryAfter > maxWait {
		t.Errorf("RetryAfter = %v, want the server's 1s", e.RetryAfter)
	}
	if e.Provider != "openai" || e.Model != "scripted" || e.URL != srv.BaseURL() {
		t.Errorf("error names %q %q %q", e.Provider, e.Model, e.URL)
	}
	if msg := e.Error(); !strings.Contains(msg, "openai model scripted at "+srv.BaseURL()) || !strings.Contains(msg, "overloaded") {
		t.Errorf("message = %q", msg)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 1 + 1 retry", n)
	}

	// Without Retry-After, the wait the layer would have made is the hint.
	srv.SetScript(llmtest.Always(llmtest.Fail(503)))
	_, err = scripted(t, srv, 0).Generate(context.Background(), hi)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Overloaded || e.RetryAfter <= 0 {
		t.Fatalf("503: err = %#v", err)
	}
}

func TestHangIsTimeout(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Hang()))
	start := time.Now()
	_, err := scripted(t, srv, 1).Generate(context.Background(), hi)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Timeout {
		t.Fatalf("err = %v, want a Timeout llm.Error", err)
	}
	if !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("message = %q", err)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("a hung model took %v to fail", elapsed)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 1 + 1 retry", n)
	}
	if !srv.WaitCancelled(2, 5*time.Second) {
		t.Errorf("the server saw %d of 2 tries abandoned", srv.Cancelled())
	}
}

func TestNotRetried(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Fail(400)))
	_, err := scripted(t, srv, 2).Generate(context.Background(), hi)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Failed || !strings.Contains(e.Error(), "400") {
		t.Fatalf("err = %v, want a Failed llm.Error naming the 400", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a 400 was tried %d times", n)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Say("never")))
	m := scripted(t, srv, 1)
	srv.Close()
	_, err := m.Generate(context.Background(), hi)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Failed {
		t.Fatalf("err = %v, want a Failed llm.Error", err)
	}
}

func TestWaitNeverPassesTheCallersDeadline(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.RateLimited("20")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := scripted(t, srv, 2).Generate(ctx, hi)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Overloaded || e.RetryAfter < 20*time.Second {
		t.Fatalf("err = %#v, want Overloaded with the server's Retry-After", err)
	}
	if ctx.Err() != nil {
		t.Error("the layer waited past the caller's deadline")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestCallerCancels(t *testing.T) {
	t.Run("while the model works", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Always(llmtest.Reply{Content: "late", Delay: time.Minute}))
		m, _ := New(context.Background(), Config{OpenAIBaseURL: srv.URL, Retries: 2})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for srv.InFlight() == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
		}()
		_, err := m.Generate(ctx, hi)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if _, ok := llm.AsError(err); ok {
			t.Error("a caller that left was reported as a model failure")
		}
		if !srv.WaitCancelled(1, 5*time.Second) {
			t.Error("the model request went on after the caller left")
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests after the caller left, want 1", n)
		}
	})
	t.Run("while waiting to retry", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Always(llmtest.RateLimited("20")))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := scripted(t, srv, 2).Generate(ctx, hi)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("while streaming", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Always(llmtest.Reply{Content: strings.Repeat("word ", 100), Interval: 100 * time.Millisecond}))
		m, _ := New(context.Background(), Config{OpenAIBaseURL: srv.URL, Retries: 2})
		ctx, cancel := context.WithCancel(context.Background())
		r := hi
		r.Stream = func(string) { cancel() }
		_, err := m.Generate(ctx, r)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if !srv.WaitCancelled(1, 5*time.Second) {
			t.Error("the stream went on after the caller left")
		}
	})
}

func TestStreamText(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Say("one two three")))
	var pieces []string
	r := hi
	r.Stream = func(s string) { pieces = append(pieces, s) }
	resp, err := scripted(t, srv, 0).Generate(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pieces, "|"); got != "one |two |three" {
		t.Errorf("pieces = %q", got)
	}
	if resp.Content != "one two three" || resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens != 3 {
		t.Errorf("response = %+v", resp)
	}
	if reqs := srv.Requests(); !reqs[0].Stream {
		t.Error("the request did not ask for a stream")
	}
}

func TestStreamWithFunctionCall(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(llmtest.Reply{Pieces: []string{"Let me ", "look."}, Call: "weather", Args: `{"city": "Paris", "days": [1, 2]}`}))
	var text strings.Builder
	r := hi
	r.Functions = []llm.Function{{Name: "weather", Description: "Weather."}, {Name: "time"}}
	r.Stream = func(s string) { text.WriteString(s) }
	resp, err := scripted(t, srv, 0).Generate(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != "Let me look." {
		t.Errorf("streamed text = %q, want only the text", text.String())
	}
	if resp.Content != "Let me look." || len(resp.Calls) != 1 || resp.Calls[0].Name != "weather" ||
		string(resp.Calls[0].Arguments) != `{"city": "Paris", "days": [1, 2]}` {
		t.Errorf("response = %q %+v", resp.Content, resp.Calls)
	}
}

func TestCutStream(t *testing.T) {
	srv := llmtest.New(t, llmtest.Queue(llmtest.Always(llmtest.Say("whole")), llmtest.Reply{Content: "a b c d e", Cut: true, CutAfter: 3}))
	var text string
	r := hi
	r.Stream = func(s string) { text += s }
	_, err := scripted(t, srv, 2).Generate(context.Background(), r)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Failed {
		t.Fatalf("err = %v, want a Failed llm.Error", err)
	}
	if text != "a b " {
		t.Errorf("text before the cut = %q", text)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a stream that had delivered text was tried %d times", n)
	}

	// Cut before any text: nothing was delivered, so it is tried again.
	srv.SetScript(llmtest.Queue(llmtest.Always(llmtest.Say("whole")), llmtest.Reply{Content: "a b", Cut: true, CutAfter: 1}))
	text = ""
	resp, err := scripted(t, srv, 2).Generate(context.Background(), r)
	if err != nil || resp.Content != "whole" || text != "whole" {
		t.Fatalf("Generate = %q (streamed %q), %v", resp.Content, text, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]time.Duration{
		"":                              0,
		"1":                             time.Second,
		"120":                           2 * time.Minute,
		"-3":                            0,
		"soon":                          0,
		"Thu, 01 Jan 2026 00:00:30 GMT": 30 * time.Second,
		"Wed, 31 Dec 2025 23:00:00 GMT": 0,
	}
	for in, want := range tests {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	for try := range 12 {
		d := backoff(try, 0)
		full := min(firstWait<<min(try, 10), maxWait)
		if d < full/2 || d > full {
			t.Errorf("backoff(%d) = %v, want within [%v, %v]", try, d, full/2, full)
		}
	}
	if d := backoff(0, 3*time.Second); d != 3*time.Second {
		t.Errorf("Retry-After 3s waited %v", d)
	}
	if d := backoff(0, time.Hour); d != maxWait {
		t.Errorf("Retry-After 1h waited %v, want the cap %v", d, maxWait)
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("http://user:secret@localhost:8080/v1"); got != "http://localhost:8080/v1" {
		t.Errorf("redact = %q", got)
	}
	if got := Redact("http://localhost:11434"); got != "http://localhost:11434" {
		t.Errorf("redact = %q", got)
	}
}

func TestCallPiece(t *testing.T) {
	tests := map[string]bool{
		`[{"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]`: true,
		`[{"id":"","type":"","function":{"name":"","arguments":"{\"a\""}}]`:          true,
		`{"name":"f","arguments":"{}"}`:                                              true,
		`[1, 2]`:                                                                     false,
		`{"a": 1}`:                                                                   false,
		`[`:                                                                          false,
		`hello`:                                                                      false,
	}
	for in, want := range tests {
		if got := callPiece([]byte(in)); got != want {
			t.Errorf("callPiece(%s) = %v, want %v", in, got, want)
		}
	}
}

// TestOllamaRetried checks that the observer transport is under another
// provider's client too: Ollama's /api/chat answers 503, then a reply.
func TestOllamaRetried(t *testing.T) {
	var calls atomic.Int32
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 || failing.Load() {
			http.Error(w, `{"error":"loading model"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m","created_at":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"ok"},"done":true,"prompt_eval_count":3,"eval_count":1}`)
	}))
	defer srv.Close()
	m, err := New(context.Background(), Config{OllamaHost: srv.URL, Model: "m", Retries: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), hi)
	if err != nil || resp.Content != "ok" || calls.Load() != 2 {
		t.Fatalf("Generate = %q, %v after %d calls", resp.Content, err, calls.Load())
	}
	failing.Store(true)
	_, err = m.Generate(context.Background(), hi)
	if e, ok := llm.AsError(err); !ok || e.Kind != llm.Overloaded || e.Provider != "ollama" || e.URL != srv.URL {
		t.Fatalf("err = %#v, want Overloaded from ollama at %s", err, srv.URL)
	}
}

var _ http.RoundTripper = observer{}
