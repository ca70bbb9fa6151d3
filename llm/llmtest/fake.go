package llmtest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"adaptbot/llm"
)

// Fake is an llm.Model in the process, for tests that need no HTTP: each
// request is answered by GenerateFunc or, for scripts that never fail, by
// Reply. It keeps the requests it was sent and, when a request streams,
// streams the reply's text word by word.
type Fake struct {
	// GenerateFunc answers a request; it wins over Reply.
	GenerateFunc func(ctx context.Context, r llm.Request) (llm.Response, error)
	// Reply answers a request that cannot fail.
	Reply func(r llm.Request) llm.Response

	mu       sync.Mutex
	requests []llm.Request
}

var _ llm.Model = (*Fake)(nil)

// Name says this is a fake.
func (f *Fake) Name() string { return "fake" }

// Generate records r and answers it.
func (f *Fake) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.requests = append(f.requests, r)
	f.mu.Unlock()
	var resp llm.Response
	var err error
	switch {
	case f.GenerateFunc != nil:
		resp, err = f.GenerateFunc(ctx, r)
	case f.Reply != nil:
		resp = f.Reply(r)
	default:
		return llm.Response{}, errors.New("llmtest.Fake: neither GenerateFunc nor Reply is set")
	}
	if err == nil && r.Stream != nil && resp.Content != "" {
		for _, w := range strings.SplitAfter(resp.Content, " ") {
			r.Stream(w)
		}
	}
	return resp, err
}

// Requests returns the requests received so far.
func (f *Fake) Requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.requests...)
}

// Calls counts the requests received so far.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}
