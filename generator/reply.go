package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"adaptbot"
	"adaptbot/llm"
)

// candidate is one attempt at a tool, as the model sent it.
type candidate struct {
	Source      string
	Description string
	Category    string
	Examples    []Example
	// Problems are what was wrong with the reply itself (examples that are
	// not objects, say), reported with the gate's findings.
	Problems []string
}

// writeArgs is the shape of the write_tool call, decoded leniently: models
// send examples as objects, as a JSON string holding the array, with the
// input as an object or as a string holding one.
type writeArgs struct {
	Source      string          `json:"source"`
	Description string          `json:"description"`
	Category    string          `json:"category"`
	Examples    json.RawMessage `json:"examples"`
}

// parseReply turns a write_tool reply into a candidate. A call is preferred;
// without one, a JSON object with a source field in the content is taken,
// and failing that the content itself is the code (and examples are missing,
// which the gate reports).
func parseReply(resp llm.Response) candidate {
	for _, call := range resp.Calls {
		if call.Name != writeToolName && len(resp.Calls) > 1 {
			continue
		}
		var args writeArgs
		err := json.Unmarshal(call.Arguments, &args)
		if err != nil {
			// Some models put raw line breaks and tabs inside JSON strings.
			if json.Unmarshal(escapeControls(call.Arguments), &args) == nil {
				return args.candidate()
			}
			return candidate{Source: string(call.Arguments), Problems: []string{
				fmt.Sprintf("the write_tool arguments are not valid JSON (%v); send a JSON object with source, description, category and examples", err)}}
		}
		return args.candidate()
	}
	if obj := jsonWithSource(resp.Content); obj != nil {
		var args writeArgs
		if json.Unmarshal(obj, &args) == nil {
			return args.candidate()
		}
	}
	return candidate{Source: resp.Content, Problems: []string{
		"the reply had no write_tool call, so no examples came with the code; call write_tool with source, description, category and at least 2 examples"}}
}

// escapeControls escapes the raw line breaks and tabs inside the strings of
// almost-JSON, leaving everything else as it is.
func escapeControls(b []byte) []byte {
	out := make([]byte, 0, len(b)+64)
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString && c == '\n':
			out = append(out, '\\', 'n')
			continue
		case inString && c == '\r':
			continue
		case inString && c == '\t':
			out = append(out, '\\', 't')
			continue
		}
		out = append(out, c)
	}
	return out
}

// jsonWithSource returns the first JSON object in s that has a non-empty
// "source" field, looking in ```json fences first. Go code holds braces
// that decode as JSON ("{}"), so an object without source is never taken.
func jsonWithSource(s string) json.RawMessage {
	for _, chunk := range append(strings.Split(s, "```"), s) {
		chunk = strings.TrimPrefix(strings.TrimSpace(chunk), "json")
		for i := strings.IndexByte(chunk, '{'); i >= 0; {
			dec := json.NewDecoder(strings.NewReader(chunk[i:]))
			var probe struct {
				Source string `json:"source"`
			}
			var raw json.RawMessage
			if dec.Decode(&raw) == nil && json.Unmarshal(raw, &probe) == nil && strings.TrimSpace(probe.Source) != "" {
				return raw
			}
			next := strings.IndexByte(chunk[i+1:], '{')
			if next < 0 {
				break
			}
			i += next + 1
		}
	}
	return nil
}

func (a writeArgs) candidate() candidate {
	c := candidate{Source: a.Source, Description: strings.TrimSpace(a.Description), Category: strings.TrimSpace(a.Category)}
	c.Examples, c.Problems = decodeExamples(a.Examples)
	return c
}

// decodeExamples reads the examples the model sent, however they were
// wrapped, and says what is wrong with each one it cannot use.
func decodeExamples(raw json.RawMessage) ([]Example, []string) {
	raw = unwrapString(raw)
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil // the gate reports that examples are missing
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, []string{fmt.Sprintf("examples must be a JSON array of {input, contains|matches} objects: %v", err)}
	}
	var out []Example
	var problems []string
	for i, item := range items {
		var e struct {
			Input    json.RawMessage `json:"input"`
			Contains any             `json:"contains"`
			Matches  any             `json:"matches"`
			HTTP     json.RawMessage `json:"http"`
		}
		if err := json.Unmarshal(unwrapString(item), &e); err != nil {
			problems = append(problems, fmt.Sprintf("example %d is not a JSON object: %v", i+1, err))
			continue
		}
		ex, bad := decodeExchanges(e.HTTP)
		for _, p := range bad {
			problems = append(problems, fmt.Sprintf("example %d, %s", i+1, p))
		}
		out = append(out, Example{Input: compact(unwrapString(e.Input)), Contains: text(e.Contains), Matches: text(e.Matches), HTTP: ex})
	}
	return out, problems
}

// decodeExchanges reads an example's http exchanges as models send them: a
// body as a string or as the JSON it holds, a status as a number or a
// string, header values as text.
func decodeExchanges(raw json.RawMessage) ([]adaptbot.Exchange, []string) {
	raw = unwrapString(raw)
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, []string{fmt.Sprintf(`http must be a JSON array of {"request": {...}, "response": {...}} objects: %v`, err)}
	}
	var out []adaptbot.Exchange
	var problems []string
	for j, item := range items {
		var x struct {
			Request struct {
				Method string          `json:"method"`
				URL    string          `json:"url"`
				Body   json.RawMessage `json:"body"`
			} `json:"request"`
			Response struct {
				Status  any             `json:"status"`
				Headers map[string]any  `json:"headers"`
				Body    json.RawMessage `json:"body"`
			} `json:"response"`
		}
		if err := json.Unmarshal(unwrapString(item), &x); err != nil {
			problems = append(problems, fmt.Sprintf(`http exchange %d is not a {"request": {...}, "response": {...}} object: %v`, j+1, err))
			continue
		}
		e := adaptbot.Exchange{
			Request:  adaptbot.ExchangeRequest{Method: strings.ToUpper(strings.TrimSpace(x.Request.Method)), URL: strings.TrimSpace(x.Request.URL), Body: bodyText(x.Request.Body)},
			Response: adaptbot.ExchangeResponse{Body: bodyText(x.Response.Body)},
		}
		switch st := x.Response.Status.(type) {
		case nil:
		case float64:
			e.Response.Status = int(st)
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(st))
			if err != nil {
				problems = append(problems, fmt.Sprintf("http exchange %d: status %q is not a number", j+1, st))
			}
			e.Response.Status = n
		default:
			problems = append(problems, fmt.Sprintf("http exchange %d: status must be a number such as 200", j+1))
		}
		for k, v := range x.Response.Headers {
			if e.Response.Headers == nil {
				e.Response.Headers = map[string]string{}
			}
			e.Response.Headers[k] = text(v)
		}
		out = append(out, e)
	}
	return out, problems
}

// bodyText is a body as a model sent it: a string's text, or the JSON it
// wrote in its place, compacted.
func bodyText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(compact(raw))
}

// unwrapString returns the JSON inside a JSON string ("{\"n\": 1}"), or raw.
func unwrapString(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw
	}
	t := strings.TrimSpace(s)
	if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return raw
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// text renders an expectation the model sent as a number or bool as text.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strings.TrimSuffix(fmt.Sprintf("%v", v), ".0")
	}
	return fmt.Sprint(v)
}
