// Package provider builds an llm.Model from configuration through langchaingo.
// It is the only package that imports a provider SDK.
package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"

	"adaptbot/llm"
)

// Config selects and configures a provider.
type Config struct {
	// Provider is openai, ollama, anthropic or googleai; empty picks the first
	// whose settings are present, in that order.
	Provider string
	// Model is the model name; empty means the provider's usual default.
	Model string
	// EmbeddingModel turns on dense tool routing with this embedding model;
	// empty leaves routing lexical.
	EmbeddingModel string

	OpenAIKey, OpenAIBaseURL string
	OllamaHost               string
	AnthropicKey             string
	GoogleKey                string

	// Timeout bounds one model call (one try); zero means 60s.
	Timeout time.Duration
	// Retries is how many times a call is tried again after a 429, a 5xx,
	// a connection error or a timeout before any output.
	Retries int
}

var defaults = map[string]string{
	"openai":    "gpt-4o-mini",
	"ollama":    "llama3.1",
	"anthropic": "claude-3-5-haiku-latest",
	"googleai":  "gemini-2.0-flash",
}

// Pick returns the provider the config selects, or "" when none is configured.
func (c Config) Pick() string {
	if c.Provider != "" {
		return strings.ToLower(c.Provider)
	}
	switch {
	case c.OpenAIKey != "" || c.OpenAIBaseURL != "":
		return "openai"
	case c.AnthropicKey != "":
		return "anthropic"
	case c.GoogleKey != "":
		return "googleai"
	case c.OllamaHost != "":
		return "ollama"
	}
	return ""
}

// New returns the configured model, or (nil, nil) when no provider is
// configured at all.
func New(ctx context.Context, c Config) (llm.Model, error) {
	name := c.Pick()
	if name == "" {
		return nil, nil
	}
	model := c.Model
	if model == "" {
		model = defaults[name]
	}
	var (
		m   llms.Model
		err error
	)
	switch name {
	case "openai":
		opts, oerr := c.openaiOptions()
		if oerr != nil {
			return nil, oerr
		}
		m, err = openai.New(append(opts, openai.WithModel(model))...)
	case "ollama":
		m, err = ollama.New(append(c.ollamaOptions(), ollama.WithModel(model))...)
	case "anthropic":
		if c.AnthropicKey == "" {
			return nil, fmt.Errorf("ADAPTBOT_LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY")
		}
		m, err = anthropic.New(anthropic.WithToken(c.AnthropicKey), anthropic.WithModel(model))
	case "googleai":
		if c.GoogleKey == "" {
			return nil, fmt.Errorf("ADAPTBOT_LLM_PROVIDER=googleai needs GOOGLE_API_KEY")
		}
		m, err = googleai.New(ctx, googleai.WithAPIKey(c.GoogleKey), googleai.WithDefaultModel(model))
	default:
		return nil, fmt.Errorf("unknown ADAPTBOT_LLM_PROVIDER %q: use openai, ollama, anthropic or googleai", c.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &adapter{m: m, name: name + "/" + model}, nil
}

// openaiOptions are the client options shared by chat and embeddings.
func (c Config) openaiOptions() ([]openai.Option, error) {
	token := c.OpenAIKey
	if token == "" {
		token = "unused" // local OpenAI-compatible servers take any token, but the client needs one
	}
	opts := []openai.Option{openai.WithToken(token)}
	if c.OpenAIBaseURL != "" {
		base, err := BaseURL(c.OpenAIBaseURL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, openai.WithBaseURL(base))
	}
	return opts, nil
}

// ollamaOptions are the client options shared by chat and embeddings.
func (c Config) ollamaOptions() []ollama.Option {
	if c.OllamaHost == "" {
		return nil
	}
	host := c.OllamaHost
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return []ollama.Option{ollama.WithServerURL(host)}
}

// BaseURL normalizes an OpenAI-compatible base URL: the client expects the
// API root, which ends in /v1; a bare host ("http://localhost:8080") gets it.
func BaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("OPENAI_BASE_URL %q is not an absolute URL", raw)
	}
	if u.Path == "" {
		u.Path = "/v1"
	}
	return u.String(), nil
}

type adapter struct {
	m    llms.Model
	name string
}

func (a *adapter) Name() string { return a.name }

func (a *adapter) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	msgs := make([]llms.MessageContent, 0, len(r.Messages))
	for _, m := range r.Messages {
		role := llms.ChatMessageTypeHuman
		switch m.Role {
		case llm.System:
			role = llms.ChatMessageTypeSystem
		case llm.Assistant:
			role = llms.ChatMessageTypeAI
		}
		msgs = append(msgs, llms.TextParts(role, m.Content))
	}
	var opts []llms.CallOption
	if len(r.Functions) > 0 {
		tools := make([]llms.Tool, 0, len(r.Functions))
		for _, f := range r.Functions {
			var params any = map[string]any{"type": "object", "properties": map[string]any{}}
			if len(f.Parameters) > 0 {
				params = f.Parameters
			}
			tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: f.Name, Description: f.Description, Parameters: params,
			}})
		}
		opts = append(opts, llms.WithTools(tools))
		if r.Force != "" {
			opts = append(opts, llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: r.Force}}))
		}
	}
	if r.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(r.MaxTokens))
	}
	resp, err := a.m.GenerateContent(ctx, msgs, opts...)
	if err != nil {
		return llm.Response{}, fmt.Errorf("%s: %w", a.name, err)
	}
	var out llm.Response
	for _, ch := range resp.Choices {
		out.Content += ch.Content
		for _, tc := range ch.ToolCalls {
			if tc.FunctionCall == nil {
				continue
			}
			out.Calls = append(out.Calls, llm.FunctionCall{Name: tc.FunctionCall.Name, Arguments: json.RawMessage(tc.FunctionCall.Arguments)})
		}
		if ch.FuncCall != nil && len(ch.ToolCalls) == 0 {
			out.Calls = append(out.Calls, llm.FunctionCall{Name: ch.FuncCall.Name, Arguments: json.RawMessage(ch.FuncCall.Arguments)})
		}
		out.Usage.PromptTokens += intInfo(ch.GenerationInfo, "PromptTokens", "InputTokens")
		out.Usage.CompletionTokens += intInfo(ch.GenerationInfo, "CompletionTokens", "OutputTokens")
	}
	return out, nil
}

func intInfo(info map[string]any, keys ...string) int {
	for _, k := range keys {
		switch v := info[k].(type) {
		case int:
			return v
		case int32:
			return int(v)
		case int64:
			return int(v)
		case float64:
			return int(v)
		}
	}
	return 0
}

// NewEmbedder returns the configured embedding model, or (nil, nil) when
// EmbeddingModel is empty. OpenAI (and compatible servers), Ollama and Google
// AI have embeddings; Anthropic has none.
func NewEmbedder(ctx context.Context, c Config) (llm.Embedder, error) {
	if c.EmbeddingModel == "" {
		return nil, nil
	}
	var (
		client embeddings.EmbedderClient
		err    error
	)
	switch name := c.Pick(); name {
	case "openai":
		opts, oerr := c.openaiOptions()
		if oerr != nil {
			return nil, oerr
		}
		client, err = openai.New(append(opts, openai.WithEmbeddingModel(c.EmbeddingModel))...)
	case "ollama":
		client, err = ollama.New(append(c.ollamaOptions(), ollama.WithModel(c.EmbeddingModel))...)
	case "googleai":
		client, err = googleai.New(ctx, googleai.WithAPIKey(c.GoogleKey), googleai.WithDefaultEmbeddingModel(c.EmbeddingModel))
	case "":
		return nil, fmt.Errorf("ADAPTBOT_EMBEDDING_MODEL is set but no provider is configured")
	default:
		return nil, fmt.Errorf("%s has no embedding models: unset ADAPTBOT_EMBEDDING_MODEL", name)
	}
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	return embeddings.NewEmbedder(client)
}
