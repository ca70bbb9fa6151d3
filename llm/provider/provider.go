// Package provider builds an llm.Model from configuration through langchaingo.
// It is the only package that imports a provider SDK.
package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
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
	// AnthropicBaseURL is ANTHROPIC_BASE_URL: a gateway or proxy in front
	// of Anthropic's Messages API; empty is Anthropic's own.
	AnthropicBaseURL string
	GoogleKey        string
	// GeminiBaseURL is GOOGLE_GEMINI_BASE_URL: where Gemini's API is
	// reached; empty is Google's own.
	GeminiBaseURL string

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
	a := &adapter{provider: name, model: model, timeout: c.Timeout, retries: max(c.Retries, 0)}
	if a.timeout <= 0 {
		a.timeout = defaultTimeout
	}
	switch name {
	case "openai":
		opts, oerr := c.openaiOptions()
		if oerr != nil {
			return nil, oerr
		}
		a.url = c.openaiBase()
		// The openai client hands function-call deltas to the streaming
		// function too; they are kept out of the text stream.
		a.callPieces = true
		m, err = openai.New(append(opts, openai.WithModel(model))...)
	case "ollama":
		a.url = c.ollamaHost()
		// Our own client of /api/chat: this langchaingo's offers no tools.
		m = &ollamaChat{base: a.url, model: model, client: httpClient()}
	case "anthropic":
		if c.AnthropicKey == "" {
			return nil, fmt.Errorf("ADAPTBOT_LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY")
		}
		base, berr := c.anthropicBase()
		if berr != nil {
			return nil, berr
		}
		a.url = base
		m, err = anthropic.New(anthropic.WithToken(c.AnthropicKey), anthropic.WithModel(model), anthropic.WithBaseURL(base), anthropic.WithHTTPClient(httpClient()))
	case "googleai":
		if c.GoogleKey == "" {
			return nil, fmt.Errorf("ADAPTBOT_LLM_PROVIDER=googleai needs GOOGLE_API_KEY")
		}
		// Gemini through Google's OpenAI-compatible endpoint: the same
		// client, retries and failure sorting as OpenAI, without the
		// gRPC SDK (and its few hundred packages) in the binary.
		opts, gerr := c.geminiOptions()
		if gerr != nil {
			return nil, gerr
		}
		a.url, _ = c.geminiBase()
		a.callPieces = true
		m, err = openai.New(append(opts, openai.WithModel(model))...)
	default:
		return nil, fmt.Errorf("unknown ADAPTBOT_LLM_PROVIDER %q: use openai, ollama, anthropic or googleai", c.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	a.m = m
	a.url = Redact(a.url)
	return a, nil
}

// Redact returns a URL without the user and password it may carry, for
// messages, logs and status pages.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// openaiOptions are the client options shared by chat and embeddings.
func (c Config) openaiOptions() ([]openai.Option, error) {
	token := c.OpenAIKey
	if token == "" {
		token = "unused" // local OpenAI-compatible servers take any token, but the client needs one
	}
	opts := []openai.Option{openai.WithToken(token), openai.WithHTTPClient(httpClient())}
	if c.OpenAIBaseURL != "" {
		base, err := BaseURL(c.OpenAIBaseURL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, openai.WithBaseURL(base))
	}
	return opts, nil
}

// openaiBase is the OpenAI API root in use: OPENAI_BASE_URL's, or
// OpenAI's own when it is unset (or not a URL, which openaiOptions refuses).
func (c Config) openaiBase() string {
	if c.OpenAIBaseURL != "" {
		if base, err := BaseURL(c.OpenAIBaseURL); err == nil {
			return base
		}
	}
	return "https://api.openai.com/v1"
}

// geminiBaseURL is Google's OpenAI-compatible endpoint for Gemini (chat,
// streaming, function calling, embeddings), which takes the API key as a
// bearer token. Tests point it at a scripted server.
var geminiBaseURL = "https://generativelanguage.googleapis.com/v1beta/openai"

// geminiBase is the Gemini endpoint in use. GOOGLE_GEMINI_BASE_URL is the
// variable Google's SDKs read; like theirs it names the API's host, to
// which the OpenAI-compatible path /v1beta/openai is added. A URL with a
// path is taken as the endpoint itself.
func (c Config) geminiBase() (string, error) {
	if c.GeminiBaseURL == "" {
		return geminiBaseURL, nil
	}
	return apiRoot("GOOGLE_GEMINI_BASE_URL", c.GeminiBaseURL, "/v1beta/openai")
}

// geminiOptions are the client options for Gemini, chat and embeddings.
func (c Config) geminiOptions() ([]openai.Option, error) {
	base, err := c.geminiBase()
	if err != nil {
		return nil, err
	}
	return []openai.Option{openai.WithToken(c.GoogleKey), openai.WithHTTPClient(httpClient()), openai.WithBaseURL(base)}, nil
}

// anthropicBase is the Messages API root in use. ANTHROPIC_BASE_URL, as
// Anthropic's SDKs read it, names the host (https://api.anthropic.com);
// the client wants the root that ends in /v1, which a bare host gets.
func (c Config) anthropicBase() (string, error) {
	if c.AnthropicBaseURL == "" {
		return "https://api.anthropic.com/v1", nil
	}
	return apiRoot("ANTHROPIC_BASE_URL", c.AnthropicBaseURL, "/v1")
}

// apiRoot checks a base URL setting and gives a bare host the API's path.
func apiRoot(name, raw, path string) (string, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%s %q is not an absolute URL", name, raw)
	}
	if u.Path == "" {
		u.Path = path
	}
	return u.String(), nil
}

// ollamaOptions are the client options shared by chat and embeddings.
func (c Config) ollamaOptions() []ollama.Option {
	opts := []ollama.Option{ollama.WithHTTPClient(httpClient())}
	if c.OllamaHost == "" {
		return opts
	}
	return append(opts, ollama.WithServerURL(c.ollamaHost()))
}

// ollamaHost is the Ollama server's URL.
func (c Config) ollamaHost() string {
	host := c.OllamaHost
	if host == "" {
		return "http://127.0.0.1:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	return host
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

// adapter is an llm.Model over a langchaingo model. Every call gets the
// per-call timeout for each try and is tried again, after a wait, when the
// provider was overloaded, failed on its side, dropped the connection or
// timed out, as long as no streamed text has been delivered yet.
type adapter struct {
	m               llms.Model
	provider, model string
	url             string
	timeout         time.Duration
	retries         int
	callPieces      bool // the SDK streams function-call pieces as well as text
}

func (a *adapter) Name() string { return a.provider + "/" + a.model }

// CallBudget says how long one call may take: one try (ADAPTBOT_MODEL_TIMEOUT),
// and every try with the waits between them (ADAPTBOT_MODEL_RETRIES, each
// wait at most maxWait).
func (a *adapter) CallBudget() (try, all time.Duration) {
	return a.timeout, time.Duration(a.retries+1)*a.timeout + time.Duration(a.retries)*maxWait
}

func (a *adapter) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	msgs, opts := request(a.provider, r)
	var streamed atomic.Bool
	if r.Stream != nil {
		opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, piece []byte) error {
			if len(piece) == 0 || a.callPieces && callPiece(piece) {
				return nil
			}
			streamed.Store(true)
			r.Stream(string(piece))
			return nil
		}))
	}
	for try := 0; ; try++ {
		at := &attempt{keep: a.callPieces}
		tryCtx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, at), a.timeout)
		resp, err := a.m.GenerateContent(tryCtx, msgs, opts...)
		timedOut := tryCtx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			// The caller gave up (or its own deadline passed): that is not
			// the model's fault, and the edge must be able to tell.
			return llm.Response{}, ctx.Err()
		}
		if err == nil && timedOut && r.Stream != nil {
			err = errDeadline // the SDK returned what it had when the timeout hit
		}
		if err == nil {
			out := response(resp)
			if a.callPieces {
				repair(&out, at.kept(), r.Stream != nil)
			}
			return out, nil
		}
		f := classify(err, at, timedOut)
		wait := backoff(try, f.retryAfter)
		last := !f.retryable || streamed.Load() || try >= a.retries
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			last = true // the caller would be gone before the next try
		}
		if last {
			e := &llm.Error{Kind: f.kind, Provider: a.provider, Model: a.model, URL: a.url, Err: f.err}
			if f.kind == llm.Overloaded {
				e.RetryAfter = max(f.retryAfter, wait)
			}
			return llm.Response{}, e
		}
		if err := sleep(ctx, wait); err != nil {
			return llm.Response{}, err
		}
	}
}

// request turns an llm.Request into langchaingo's messages and options, for
// the named provider. Function calls and their results go as langchaingo's
// tool-call parts, which each provider's client turns into its own
// messages (Ollama's is ours, ollamaChat); the exception is what this
// langchaingo version cannot carry: its Anthropic client reads only the
// first part of an assistant or tool message, so each call and each result
// gets a message of its own (Anthropic merges consecutive turns of one role).
func request(provider string, r llm.Request) ([]llms.MessageContent, []llms.CallOption) {
	msgs := make([]llms.MessageContent, 0, len(r.Messages))
	for _, m := range r.Messages {
		switch {
		case m.Role == llm.Tool:
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: m.CallID, Name: m.Name, Content: m.Content}}})
		case m.Role == llm.Assistant && len(m.Calls) > 0:
			var parts []llms.ContentPart
			if m.Content != "" && provider != "anthropic" {
				parts = append(parts, llms.TextContent{Text: m.Content})
			}
			for _, c := range m.Calls {
				args := string(c.Arguments)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				tc := llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: args}}
				if provider == "anthropic" {
					msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{tc}})
					continue
				}
				parts = append(parts, tc)
			}
			if len(parts) > 0 {
				msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts})
			}
		default:
			role := llms.ChatMessageTypeHuman
			switch m.Role {
			case llm.System:
				role = llms.ChatMessageTypeSystem
			case llm.Assistant:
				role = llms.ChatMessageTypeAI
			}
			var part llms.ContentPart = llms.TextContent{Text: m.Content}
			// This langchaingo's Anthropic client honours a cache mark on a
			// user message's text only (not on the system prompt or tools);
			// a breakpoint there caches tools, system and conversation so far.
			if m.Cache && provider == "anthropic" && role == llms.ChatMessageTypeHuman {
				part = llms.WithCacheControl(part, anthropic.EphemeralCache())
			}
			msgs = append(msgs, llms.MessageContent{Role: role, Parts: []llms.ContentPart{part}})
		}
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
		switch {
		case r.Force != "":
			opts = append(opts, llms.WithToolChoice(llms.ToolChoice{Type: "function", Function: &llms.FunctionReference{Name: r.Force}}))
		case r.NoCalls:
			opts = append(opts, llms.WithToolChoice("none"))
		}
	}
	if r.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(r.MaxTokens))
	}
	if r.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*r.Temperature))
	}
	return msgs, opts
}

// response turns langchaingo's reply into an llm.Response.
func response(resp *llms.ContentResponse) llm.Response {
	var out llm.Response
	for _, ch := range resp.Choices {
		out.Content += ch.Content
		for _, tc := range ch.ToolCalls {
			if tc.FunctionCall == nil {
				continue
			}
			out.Calls = append(out.Calls, llm.FunctionCall{ID: tc.ID, Name: tc.FunctionCall.Name, Arguments: json.RawMessage(tc.FunctionCall.Arguments)})
		}
		if ch.FuncCall != nil && len(ch.ToolCalls) == 0 {
			out.Calls = append(out.Calls, llm.FunctionCall{Name: ch.FuncCall.Name, Arguments: json.RawMessage(ch.FuncCall.Arguments)})
		}
		if th, _ := ch.GenerationInfo["ThinkingContent"].(string); th != "" {
			out.Reasoning = joinReasoning(out.Reasoning, th)
		}
		out.Usage.PromptTokens += intInfo(ch.GenerationInfo, "PromptTokens", "InputTokens")
		out.Usage.CompletionTokens += intInfo(ch.GenerationInfo, "CompletionTokens", "OutputTokens")
	}
	return out
}

// callPiece reports whether a streamed piece is langchaingo's JSON of
// function-call deltas (a list of tool calls, or a legacy function call)
// rather than text. A text piece is a token or so, never such a document.
func callPiece(b []byte) bool {
	if b[0] != '[' && b[0] != '{' {
		return false
	}
	var calls []struct {
		Function *json.RawMessage `json:"function"`
	}
	if json.Unmarshal(b, &calls) == nil {
		return len(calls) > 0 && calls[0].Function != nil
	}
	var fn struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	}
	return json.Unmarshal(b, &fn) == nil && fn.Name != nil && fn.Arguments != nil
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
		opts, gerr := c.geminiOptions()
		if gerr != nil {
			return nil, gerr
		}
		client, err = openai.New(append(opts, openai.WithEmbeddingModel(c.EmbeddingModel))...)
	case "":
		return nil, fmt.Errorf("ADAPTBOT_EMBEDDING_MODEL is set but no provider is configured")
	default:
		return nil, fmt.Errorf("%s has no embedding models: unset ADAPTBOT_EMBEDDING_MODEL", name)
	}
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	e, err := embeddings.NewEmbedder(client)
	if err != nil {
		return nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return timedEmbedder{e: e, timeout: timeout}, nil
}

// timedEmbedder bounds each embedding call by the per-call timeout, so a
// hung embeddings server cannot hold a request until its own deadline.
type timedEmbedder struct {
	e       llm.Embedder
	timeout time.Duration
}

func (t timedEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.e.EmbedDocuments(ctx, texts)
}

func (t timedEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.e.EmbedQuery(ctx, text)
}
