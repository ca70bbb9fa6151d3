package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// ollamaChat is an llms.Model over Ollama's native /api/chat, with tools.
// This langchaingo's Ollama client sends text only (no tools, no tool
// calls, no tool results), so with it a local model could call no tool at
// all; this client sends the offered functions as Ollama's tools, the
// conversation's calls and results as its tool_calls and tool messages, and
// reads what Ollama answers: arguments as a JSON object, done_reason "stop"
// even when the reply is tool calls, and a thinking field kept apart from
// the answer. Streaming reads Ollama's NDJSON, one chunk per line.
type ollamaChat struct {
	base   string // e.g. http://127.0.0.1:11434
	model  string
	client *http.Client
}

var _ llms.Model = (*ollamaChat)(nil)

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     *int            `json:"index,omitempty"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Stream   bool            `json:"stream"`
	Tools    []llms.Tool     `json:"tools,omitempty"`
	Options  map[string]any  `json:"options,omitempty"`
}

type ollamaChunk struct {
	Message         *ollamaMessage `json:"message"`
	Done            bool           `json:"done"`
	DoneReason      string         `json:"done_reason"`
	PromptEvalCount int            `json:"prompt_eval_count"`
	EvalCount       int            `json:"eval_count"`
	Error           string         `json:"error"`
}

func (o *ollamaChat) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, o, prompt, options...)
}

func (o *ollamaChat) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, f := range options {
		f(&opts)
	}
	req := ollamaRequest{Model: o.model, Stream: opts.StreamingFunc != nil, Tools: opts.Tools}
	if opts.MaxTokens > 0 {
		req.Options = map[string]any{"num_predict": opts.MaxTokens}
	}
	for _, m := range msgs {
		om, err := ollamaMessageOf(m)
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, om...)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(o.base, "/")+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/x-ndjson")
	resp, err := o.client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("%s (HTTP %d)", e.Error, resp.StatusCode)
		}
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var (
		content, thinking strings.Builder
		calls             []llms.ToolCall
		last              ollamaChunk
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ch ollamaChunk
		if err := json.Unmarshal(line, &ch); err != nil {
			return nil, fmt.Errorf("ollama sent a line that is not JSON: %.200s", line)
		}
		if ch.Error != "" {
			return nil, errors.New(ch.Error)
		}
		if m := ch.Message; m != nil {
			content.WriteString(m.Content)
			thinking.WriteString(m.Thinking)
			for i, c := range m.ToolCalls {
				id := c.ID
				if id == "" {
					// Older Ollama versions send no ids; the result must
					// still be matched to its call.
					id = fmt.Sprintf("call_%d", len(calls)+i)
				}
				args := strings.TrimSpace(string(c.Function.Arguments))
				if args == "" || args == "null" {
					args = "{}"
				}
				calls = append(calls, llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Function.Name, Arguments: args}})
			}
			if opts.StreamingFunc != nil && m.Content != "" {
				if err := opts.StreamingFunc(ctx, []byte(m.Content)); err != nil {
					return nil, err
				}
			}
		}
		last = ch
		if ch.Done {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !last.Done {
		return nil, errors.New("ollama's reply ended before it said done")
	}
	choice := &llms.ContentChoice{
		Content:    content.String(),
		StopReason: last.DoneReason,
		ToolCalls:  calls,
		GenerationInfo: map[string]any{
			"PromptTokens":     last.PromptEvalCount,
			"CompletionTokens": last.EvalCount,
			"ThinkingContent":  thinking.String(),
		},
	}
	if len(calls) > 0 {
		choice.FuncCall = calls[0].FunctionCall
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

// ollamaMessageOf turns one langchaingo message into Ollama's: text (and
// images) as content, tool calls with their arguments as objects, and each
// tool result as a tool message of its own.
func ollamaMessageOf(m llms.MessageContent) ([]ollamaMessage, error) {
	role := map[llms.ChatMessageType]string{
		llms.ChatMessageTypeSystem: "system", llms.ChatMessageTypeAI: "assistant",
		llms.ChatMessageTypeHuman: "user", llms.ChatMessageTypeGeneric: "user", llms.ChatMessageTypeTool: "tool",
	}[m.Role]
	if role == "" {
		return nil, fmt.Errorf("ollama: no role for %q messages", m.Role)
	}
	out := ollamaMessage{Role: role}
	var results []ollamaMessage
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			out.Content += p.Text
		case llms.ToolCall:
			if p.FunctionCall == nil {
				continue
			}
			var c ollamaToolCall
			c.ID = p.ID
			c.Function.Name = p.FunctionCall.Name
			args := strings.TrimSpace(p.FunctionCall.Arguments)
			if args == "" || !json.Valid([]byte(args)) {
				args = "{}"
			}
			c.Function.Arguments = json.RawMessage(args)
			out.ToolCalls = append(out.ToolCalls, c)
		case llms.ToolCallResponse:
			results = append(results, ollamaMessage{Role: "tool", Content: p.Content, ToolName: p.Name})
		default:
			return nil, fmt.Errorf("ollama: %T parts are not supported", p)
		}
	}
	if len(results) > 0 {
		return results, nil
	}
	return []ollamaMessage{out}, nil
}
