// Package llm is AdaptBot's contract with language models: a chat Model that
// can be forced to call a function with a JSON schema (how we get structured
// output from any provider), and the helpers built on it. It imports no
// provider SDK; package llm/provider adapts langchaingo to it.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"adaptbot"
)

// Role is who speaks a message.
type Role = adaptbot.MessageRole

// The roles a message can have.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	// Tool is the role of a function call's result.
	Tool Role = "tool"
)

// Message is one turn of a conversation (adaptbot.Message): an assistant
// message may carry the function calls the model made, each answered by a
// Tool message that names the call and the function.
type Message = adaptbot.Message

// Function is a function the model may call, with its parameters' JSON
// schema.
type Function = adaptbot.Function

// FunctionCall is the model's call of a Function; its ID is the
// provider's name for the call, which its result must quote.
type FunctionCall = adaptbot.FunctionCall

// Request is one call of a model.
type Request struct {
	Messages  []Message
	Functions []Function
	// Force names the function the model must call; empty leaves it free.
	Force string
	// NoCalls offers the Functions (so the prompt stays the one the chat
	// began with) but asks for a text answer; providers that cannot be
	// told so may still call one, which the caller must then ignore.
	NoCalls   bool
	MaxTokens int
	// Temperature, when set, is the sampling temperature the caller asked
	// for; nil leaves the provider's default.
	Temperature *float64
	// Stream, when set, hears the reply's text as it arrives, piece by
	// piece (never the function calls). The Response still carries the
	// whole reply.
	Stream func(text string)
}

// Usage counts tokens as the provider reported them.
type Usage = adaptbot.Usage

// Response is what the model said.
type Response struct {
	Content string
	Calls   []FunctionCall
	Usage   Usage
	// Reasoning is what the model thought before it answered (reasoning,
	// reasoning_content, thinking), where the provider sends it as text. It
	// is never part of Content: it belongs in the trace, not the answer.
	Reasoning string
}

// Model is a chat model.
type Model interface {
	Generate(ctx context.Context, r Request) (Response, error)
	// Name says which provider and model this is, for people.
	Name() string
}

// Budgeted is a Model that says how long its calls may take: one try, and
// one call with all its retries. Work bounded by model calls asks it rather
// than copying the provider's settings.
type Budgeted interface {
	CallBudget() (try, all time.Duration)
}

// Embedder turns texts into vectors.
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// ConfigureHint says which settings turn a model on.
const ConfigureHint = "set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server), ANTHROPIC_API_KEY, GOOGLE_API_KEY or OLLAMA_HOST, and optionally ADAPTBOT_LLM_PROVIDER and ADAPTBOT_MODEL"

// ErrNoModel is returned by everything that needs a model when none is set.
var ErrNoModel = errors.New("no language model is configured: " + ConfigureHint)

// Meter wraps a Model and counts its calls and tokens. Make one per request.
type Meter struct {
	Model
	calls, prompt, completion atomic.Int64

	mu        sync.Mutex
	reasoning []string
}

// NewMeter returns a Meter around m.
func NewMeter(m Model) *Meter { return &Meter{Model: m} }

// Generate calls the wrapped model and counts the call.
func (m *Meter) Generate(ctx context.Context, r Request) (Response, error) {
	resp, err := m.Model.Generate(ctx, r)
	m.calls.Add(1)
	m.prompt.Add(int64(resp.Usage.PromptTokens))
	m.completion.Add(int64(resp.Usage.CompletionTokens))
	if resp.Reasoning != "" {
		m.mu.Lock()
		m.reasoning = append(m.reasoning, resp.Reasoning)
		m.mu.Unlock()
	}
	return resp, err
}

// TakeReasoning returns the reasoning of the calls since the last take, one
// paragraph per call, and forgets it.
func (m *Meter) TakeReasoning() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := strings.Join(m.reasoning, "\n\n")
	m.reasoning = nil
	return s
}

// Counts returns the calls and tokens so far.
func (m *Meter) Counts() (calls int, u Usage) {
	return int(m.calls.Load()), Usage{PromptTokens: int(m.prompt.Load()), CompletionTokens: int(m.completion.Load())}
}

// Structured asks the model to answer by calling fn and returns the arguments
// it passed. Models that answer in prose instead are tolerated when the prose
// holds a JSON object: the first one found is taken. offered, when given, are
// the functions the conversation has offered so far (fn among them): they
// are sent as they are, so the prompt begins as the previous call's did.
func Structured(ctx context.Context, m Model, msgs []Message, fn Function, offered ...Function) (json.RawMessage, error) {
	if m == nil {
		return nil, ErrNoModel
	}
	fns := offered
	if len(fns) == 0 {
		fns = []Function{fn}
	}
	resp, err := m.Generate(ctx, Request{Messages: msgs, Functions: fns, Force: fn.Name})
	if err != nil {
		return nil, err
	}
	for _, c := range resp.Calls {
		if c.Name == fn.Name || len(resp.Calls) == 1 {
			args := json.RawMessage(strings.TrimSpace(string(c.Arguments)))
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			if !json.Valid(args) {
				return nil, fmt.Errorf("model called %s with invalid JSON: %.200s", fn.Name, args)
			}
			return args, nil
		}
	}
	if obj := FirstJSONObject(resp.Content); obj != nil {
		return obj, nil
	}
	return nil, fmt.Errorf("model did not call %s and its reply holds no JSON object: %.200q", fn.Name, resp.Content)
}

// FirstJSONObject returns the first well-formed JSON object in s, or nil.
func FirstJSONObject(s string) json.RawMessage {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == nil && len(raw) > 0 && raw[0] == '{' {
			return raw
		}
		next := strings.IndexByte(s[i+1:], '{')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return nil
}

// Text asks the model for a plain reply.
func Text(ctx context.Context, m Model, msgs []Message) (string, error) {
	if m == nil {
		return "", ErrNoModel
	}
	resp, err := m.Generate(ctx, Request{Messages: msgs})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(resp.Content), nil
}
