package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"adaptbot/llm"
)

// maxKept bounds the reply bytes an attempt keeps for repair.
const maxKept = 8 << 20

// keptBody copies what the SDK reads of a reply into its attempt, so that
// the adapter can read the reply again after the SDK (see repair).
type keptBody struct {
	io.ReadCloser
	a *attempt
}

func (b *keptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.a.mu.Lock()
		if b.a.body.Len()+n <= maxKept {
			b.a.body.Write(p[:n])
		}
		b.a.mu.Unlock()
	}
	return n, err
}

// kept returns the reply bytes the attempt kept.
func (a *attempt) kept() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	return bytes.Clone(a.body.Bytes())
}

// callDelta is one tool-call fragment of an OpenAI-compatible stream.
type callDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// reasoningOf is the reasoning an OpenAI-compatible message or delta may
// carry: reasoning (OpenRouter), reasoning_content (DeepSeek and others),
// reasoning_details (OpenRouter, in parts; encrypted ones have no text).
type reasoningOf struct {
	Reasoning        *string `json:"reasoning"`
	ReasoningContent *string `json:"reasoning_content"`
	Details          []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Summary string `json:"summary"`
	} `json:"reasoning_details"`
}

func (r reasoningOf) text() string {
	var b strings.Builder
	switch {
	case r.Reasoning != nil && *r.Reasoning != "":
		b.WriteString(*r.Reasoning)
	case r.ReasoningContent != nil && *r.ReasoningContent != "":
		b.WriteString(*r.ReasoningContent)
	default:
		for _, d := range r.Details {
			b.WriteString(d.Text)
			b.WriteString(d.Summary)
		}
	}
	return b.String()
}

// repair reads an OpenAI-compatible reply again, as the provider sent it,
// and mends what this langchaingo's openai client loses:
//
//   - In a stream, the client starts a new tool call on every fragment
//     that carries "type":"function", and OpenRouter's streams of gpt-4.1,
//     gpt-4o(-mini), o4-mini and Claude repeat it on every argument
//     fragment: the call arrives split in pieces, its arguments lost. The
//     fragments are joined here by their index, as the API defines them
//     (a fragment without an index continues the last call, or starts one
//     when it brings a new id).
//   - Reasoning (OpenRouter's reasoning and reasoning_details) is not
//     read by the client at all; it is collected for the trace.
//
// A reply that cannot be read again is left as the client made it.
func repair(out *llm.Response, body []byte, streamed bool) {
	if len(body) == 0 {
		return
	}
	if !streamed {
		var whole struct {
			Choices []struct {
				Message reasoningOf `json:"message"`
			} `json:"choices"`
		}
		// OpenRouter pads replies with whitespace while the model works.
		if json.Unmarshal(bytes.TrimSpace(body), &whole) == nil && len(whole.Choices) > 0 {
			out.Reasoning = joinReasoning(out.Reasoning, whole.Choices[0].Message.text())
		}
		return
	}
	type call struct {
		id, name string
		args     strings.Builder
	}
	var (
		calls     []*call
		byIndex   = map[int]*call{}
		reasoning strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxKept)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments (": OPENROUTER PROCESSING"), events, blanks
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					reasoningOf
					ToolCalls []callDelta `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &chunk) != nil || len(chunk.Choices) == 0 {
			continue
		}
		d := chunk.Choices[0].Delta
		reasoning.WriteString(d.text())
		for _, f := range d.ToolCalls {
			var c *call
			switch {
			case f.Index != nil && byIndex[*f.Index] != nil && (f.ID == "" || f.ID == byIndex[*f.Index].id):
				c = byIndex[*f.Index]
			case f.Index == nil && len(calls) > 0 && (f.ID == "" || f.ID == calls[len(calls)-1].id):
				c = calls[len(calls)-1]
			default:
				c = &call{id: f.ID}
				calls = append(calls, c)
				if f.Index != nil {
					byIndex[*f.Index] = c
				}
			}
			if c.name == "" {
				c.name = f.Function.Name
			}
			c.args.WriteString(f.Function.Arguments)
		}
	}
	out.Reasoning = joinReasoning(out.Reasoning, reasoning.String())
	if len(calls) == 0 {
		return
	}
	out.Calls = out.Calls[:0]
	for _, c := range calls {
		out.Calls = append(out.Calls, llm.FunctionCall{ID: c.id, Name: c.name, Arguments: json.RawMessage(c.args.String())})
	}
}

// joinReasoning adds more to what was said, unless it was said already.
func joinReasoning(had, more string) string {
	switch {
	case more == "" || strings.Contains(had, more):
		return had
	case had == "":
		return more
	}
	return had + "\n\n" + more
}
