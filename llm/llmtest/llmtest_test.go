package llmtest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

func post(t *testing.T, ctx context.Context, s *Server, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return s.Client().Do(req)
}

func client(t *testing.T, s *Server) *openai.LLM {
	t.Helper()
	m, err := openai.New(openai.WithToken("x"), openai.WithBaseURL(s.BaseURL()), openai.WithModel("scripted"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestQueueThenStatusAndHeaders(t *testing.T) {
	s := New(t, Queue(Always(Say("ok")), RateLimited("1"), Fail(503)))
	for _, want := range []int{429, 503, 200, 200} {
		resp, err := post(t, context.Background(), s, `{"model":"m","messages":[]}`)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("status = %d, want %d", resp.StatusCode, want)
		}
		if want == 429 && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After = %q", resp.Header.Get("Retry-After"))
		}
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("%d requests", n)
	}
}

func TestHangUntilCancelled(t *testing.T) {
	s := New(t, Always(Hang()))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := post(t, ctx, s, `{"model":"m","messages":[]}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if !s.WaitCancelled(1, 5*time.Second) || !s.WaitIdle(5*time.Second) {
		t.Fatalf("cancelled = %d, in flight = %d", s.Cancelled(), s.InFlight())
	}
}

func TestHangingRequestIsReleasedWhenTheTestEnds(t *testing.T) {
	// A hanging handler must not keep Close waiting: the cleanup releases
	// it, and the client that waited on it gets an answer or an error.
	var s *Server
	answered := make(chan error, 1)
	// Should the cleanup wait on the handler after all, fail rather than
	// hang until go test's own timeout.
	watchdog := time.AfterFunc(30*time.Second, func() {
		panic("the server's cleanup still waits on a hanging request after 30s")
	})
	defer watchdog.Stop()
	start := time.Now()
	t.Run("hang", func(t *testing.T) {
		s = New(t, Always(Hang()))
		go func() {
			resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			answered <- err
		}()
		deadline := time.Now().Add(10 * time.Second)
		for s.InFlight() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the request never reached the handler")
			}
			time.Sleep(5 * time.Millisecond)
		}
		select {
		case err := <-answered:
			t.Fatalf("a hanging request was answered while the test ran (err %v)", err)
		case <-time.After(50 * time.Millisecond):
		}
	})
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the cleanup took %v", took)
	}
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the client of the hanging request was never released")
	}
	if n := s.InFlight(); n != 0 {
		t.Errorf("%d requests still in flight after the cleanup", n)
	}
}

func TestDelay(t *testing.T) {
	s := New(t, Always(Reply{Content: "late", Delay: 50 * time.Millisecond}))
	out, err := client(t, s).Call(context.Background(), "hi")
	if err != nil || out != "late" {
		t.Fatalf("Call = %q, %v", out, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	s.SetScript(Always(Reply{Content: "later", Delay: time.Minute}))
	if _, err := client(t, s).Call(ctx, "hi"); err == nil {
		t.Fatal("a call past its deadline succeeded")
	}
	if !s.WaitCancelled(1, 5*time.Second) {
		t.Fatal("the delayed request was not seen cancelled")
	}
}

func TestStreamText(t *testing.T) {
	s := New(t, Always(Say("one two three")))
	var pieces []string
	resp, err := client(t, s).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			if len(b) > 0 {
				pieces = append(pieces, string(b))
			}
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pieces, "|"); got != "one |two |three" {
		t.Errorf("pieces = %q", got)
	}
	c := resp.Choices[0]
	if c.Content != "one two three" || c.GenerationInfo["CompletionTokens"] != 3 {
		t.Errorf("content = %q, info = %v", c.Content, c.GenerationInfo)
	}
	if r := s.Requests(); len(r) != 1 || !r[0].Stream {
		t.Errorf("requests = %+v", r)
	}
}

func TestStreamToolCall(t *testing.T) {
	s := New(t, Always(Reply{Pieces: []string{"Let me ", "check."}, Call: "weather", Args: `{"city": "Paris", "days": 3}`}))
	resp, err := client(t, s).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "weather", Parameters: map[string]any{"type": "object"}}}}),
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0]
	if c.Content != "Let me check." || len(c.ToolCalls) != 1 || c.ToolCalls[0].FunctionCall.Name != "weather" ||
		c.ToolCalls[0].FunctionCall.Arguments != `{"city": "Paris", "days": 3}` {
		t.Errorf("choice = %q %+v", c.Content, c.ToolCalls)
	}
}

func TestStreamCut(t *testing.T) {
	s := New(t, Always(Reply{Content: "a b c d e", Cut: true, CutAfter: 3}))
	var got string
	_, err := client(t, s).GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error { got += string(b); return nil }))
	if err == nil {
		t.Fatal("a cut stream was not an error")
	}
	if got != "a b " {
		t.Errorf("text before the cut = %q", got)
	}
}

func TestUnstreamedCut(t *testing.T) {
	for _, after := range []int{0, -1} {
		s := New(t, Always(Reply{Content: "hello", Cut: true, CutAfter: after}))
		if _, err := client(t, s).Call(context.Background(), "hi"); err == nil {
			t.Errorf("CutAfter %d: a cut reply was not an error", after)
		}
	}
}

func TestStreamCancelledBetweenEvents(t *testing.T) {
	s := New(t, Always(Reply{Content: "a b c d e", Interval: time.Minute}))
	ctx, cancel := context.WithCancel(context.Background())
	// langchaingo returns the partial reply without an error here; the
	// provider layer checks the context itself.
	client(t, s).GenerateContent(ctx,
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { cancel(); return nil }))
	if !s.WaitCancelled(1, 5*time.Second) {
		t.Fatal("the server did not see the stream cancelled")
	}
}
