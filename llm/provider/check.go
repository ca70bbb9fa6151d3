package provider

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/llm"
)

// CheckEvery is how often a server checks that its model answers.
const CheckEvery = 60 * time.Second

// Status is what /healthz says about the model (adaptbot.ModelStatus):
// which provider, which model, the URL that was tried, and whether it
// answered the last check (a request for the provider's model list, which
// costs no tokens).
type Status = adaptbot.ModelStatus

// Check checks the model now and then, and keeps the last outcome.
type Check struct {
	client *http.Client
	req    func(ctx context.Context) (*http.Request, error) // nil when no model is configured

	mu     sync.Mutex
	status Status
}

// NewCheck prepares the check for the configured provider; with none it
// reports null fields and the setting that turns a model on.
func NewCheck(c Config) *Check {
	m := &Check{client: &http.Client{Timeout: 10 * time.Second}}
	name := c.Pick()
	if name == "" {
		m.status = Status{Setting: llm.ConfigureHint}
		return m
	}
	model := c.Model
	var (
		url    string
		header = http.Header{}
	)
	switch name {
	case "openai":
		url = strings.TrimRight(c.openaiBase(), "/") + "/models"
		token := c.OpenAIKey
		if token == "" {
			token = "unused"
		}
		header.Set("Authorization", "Bearer "+token)
	case "ollama":
		url = strings.TrimRight(c.ollamaHost(), "/") + "/api/tags"
	case "anthropic":
		url = "https://api.anthropic.com/v1/models"
		header.Set("x-api-key", c.AnthropicKey)
		header.Set("anthropic-version", "2023-06-01")
	case "googleai":
		url = "https://generativelanguage.googleapis.com/v1beta/models"
		header.Set("x-goog-api-key", c.GoogleKey)
	}
	// The request keeps the URL as configured; what people see never
	// carries its credentials.
	m.status = Status{Provider: name, Name: model, URL: Redact(url)}
	m.req = func(ctx context.Context) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		r.Header = header.Clone()
		return r, nil
	}
	return m
}

// Status returns the last outcome.
func (m *Check) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// Once asks the provider for its model list once and records the outcome.
func (m *Check) Once(ctx context.Context) Status {
	if m.req == nil {
		return m.Status()
	}
	errText := ""
	req, err := m.req(ctx)
	if err == nil {
		var resp *http.Response
		resp, err = m.client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				errText = fmt.Sprintf("%s answered %s", req.URL.Redacted(), resp.Status)
				if s := strings.TrimSpace(string(body)); s != "" {
					errText += ": " + s
				}
			}
		}
	}
	if err != nil {
		errText = err.Error()
	}
	ok := errText == ""
	now := time.Now().UTC()
	m.mu.Lock()
	m.status.Reachable, m.status.Error, m.status.CheckedAt = &ok, errText, &now
	st := m.status
	m.mu.Unlock()
	return st
}

// Run checks at once and then every interval until ctx ends.
func (m *Check) Run(ctx context.Context, every time.Duration, onChange func(Status)) {
	if m.req == nil {
		return
	}
	var last *bool
	for {
		st := m.Once(ctx)
		if onChange != nil && (last == nil || *last != *st.Reachable) && ctx.Err() == nil {
			onChange(st)
		}
		last = st.Reachable
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
