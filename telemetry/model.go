package telemetry

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"adaptbot/llm"
)

// model is an llm.Model observed: its calls traced and counted.
type model struct {
	llm.Model
	provider, name string // as AdaptBot names them: "openai", "gpt-4o-mini"
	metrics        *Metrics
	span           string               // "chat gpt-4o-mini"
	attrs          []attribute.KeyValue // every span's, made once
}

// WrapModel returns m observed: each call opens a "chat {model}" span
// (kind client) with gen_ai.operation.name, gen_ai.provider.name,
// gen_ai.request.model and the tokens used, and is counted in metrics (by
// provider, model and outcome, with its tokens and time). Wrap the model
// once, where it is made, so that every caller (chat, builds, plans) is
// observed and no provider needs to know. A nil m stays nil; a nil metrics
// counts nothing.
func WrapModel(m llm.Model, metrics *Metrics) llm.Model {
	if m == nil {
		return nil
	}
	provider, name := splitName(m.Name())
	span := "chat"
	if name != "" {
		span += " " + name
	}
	return &model{Model: m, provider: provider, name: name, metrics: metrics, span: span, attrs: []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(genAIProvider(provider)),
		semconv.GenAIRequestModel(name),
	}}
}

// CallBudget passes on the wrapped model's, so that deadlines derived from
// it (llm.Budgeted) still see the provider's settings; zero when it says
// none.
func (m *model) CallBudget() (try, all time.Duration) {
	if b, ok := m.Model.(llm.Budgeted); ok {
		return b.CallBudget()
	}
	return 0, 0
}

// Generate calls the model inside its span, and counts the call.
func (m *model) Generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	st := current.Load()
	if st == nil && m.metrics == nil {
		return m.Model.Generate(ctx, r)
	}
	began := time.Now()
	var s trace.Span
	if st != nil {
		ctx, s = st.tracer.Start(ctx, m.span, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(m.attrs...))
		if s.IsRecording() {
			if r.MaxTokens > 0 {
				s.SetAttributes(semconv.GenAIRequestMaxTokens(r.MaxTokens))
			}
			if st.content {
				s.SetAttributes(semconv.GenAIInputMessagesKey.String(messagesJSON(r.Messages)))
			}
		}
	}
	resp, err := m.Model.Generate(ctx, r)
	outcome := "ok"
	if err != nil {
		outcome = errorType(err)
	}
	m.metrics.ModelCall(m.provider, m.name, outcome, resp.Usage, time.Since(began))
	if s == nil {
		return resp, err
	}
	if s.IsRecording() && err == nil {
		s.SetAttributes(
			semconv.GenAIUsageInputTokens(resp.Usage.PromptTokens),
			semconv.GenAIUsageOutputTokens(resp.Usage.CompletionTokens),
			semconv.GenAIResponseFinishReasons(finishReason(resp)...))
		if st.content {
			s.SetAttributes(semconv.GenAIOutputMessagesKey.String(outputJSON(resp)))
		}
	}
	finish(s, "", err)
	return resp, err
}

// describe returns the provider and model of m as the GenAI conventions
// name them.
func describe(m llm.Model) (provider, name string) {
	provider, name = splitName(m.Name())
	return genAIProvider(provider), name
}

// splitName splits an llm.Model's Name, "provider/model" (the model's own
// name may hold more slashes).
func splitName(s string) (provider, name string) {
	provider, name, _ = strings.Cut(s, "/")
	return provider, name
}

// genAIProvider is gen_ai.provider.name for AdaptBot's provider names.
// An OpenAI-compatible server (Groq, vLLM, ...) speaks OpenAI's API and is
// reported as openai.
func genAIProvider(p string) string {
	if p == "googleai" {
		return "gcp.gemini"
	}
	return p
}

// finishReason is the reason the model stopped, as far as a Response
// tells.
func finishReason(r llm.Response) []string {
	if len(r.Calls) > 0 {
		return []string{"tool_call"}
	}
	return []string{"stop"}
}

// part is one part of a message in the conventions' JSON form.
type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
}

// message is a message in the conventions' JSON form.
type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// messagesJSON is gen_ai.input.messages: each message's text cut to
// maxContent.
func messagesJSON(msgs []llm.Message) string {
	out := make([]message, len(msgs))
	for i, m := range msgs {
		out[i] = message{Role: string(m.Role), Parts: []part{{Type: "text", Content: cut(m.Content)}}}
	}
	return encode(out)
}

// outputJSON is gen_ai.output.messages: the reply's text and tool calls.
// Arguments that are not valid JSON are kept as text, never as raw JSON
// that cannot be encoded.
func outputJSON(r llm.Response) string {
	m := message{Role: string(llm.Assistant), FinishReason: finishReason(r)[0]}
	if r.Content != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: cut(r.Content)})
	}
	for _, c := range r.Calls {
		p := part{Type: "tool_call", Name: c.Name, Arguments: cut(string(c.Arguments))}
		if len(c.Arguments) <= maxContent && json.Valid(c.Arguments) {
			p.Arguments = json.RawMessage(c.Arguments)
		}
		m.Parts = append(m.Parts, p)
	}
	return encode([]message{m})
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "[]" // unreachable: every value above encodes
	}
	return string(b)
}
