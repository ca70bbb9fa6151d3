package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"adaptbot/toolbox"
)

// DirectFlag is the boolean argument the agent adds to the schema of every
// local tool it offers (unless the tool opts out with `const Direct =
// false`): with it the model says, call by call, that the tool's output
// alone answers the message. When every call of a round says so and ran
// well, the agent answers with the outputs and asks the model nothing more:
// one model round trip instead of two. The flag is the agent's, not the
// tool's: it is taken out of the arguments before the tool validates or
// sees them, so a schema that forbids extra properties still holds.
//
// A flag rather than a second function (answer_with): the model decides in
// the same call it already makes, the tool's own schema and description
// stay the one place that says what it does, and the functions offered do
// not double. Which form real models follow better can only be measured
// against real providers.
const DirectFlag = "output_is_answer"

// directProperty is DirectFlag's schema, as the model sees it. The system
// prompt says when to set it; the schema has no description, as every
// local tool's schema carries it on every call (one would cost about 15
// prompt tokens a tool).
var directProperty = json.RawMessage(`{"type":"boolean"}`)

// flagged reports whether a tool is offered with DirectFlag: a local tool
// that did not opt out, whose schema is an object schema that has no
// property of that name already.
func flagged(spec toolbox.Spec) bool {
	if spec.Remote() || spec.NoDirect {
		return false
	}
	_, ok := withFlag(spec.Parameters)
	return ok
}

// withFlag returns params with DirectFlag added to its properties, and
// whether it could be added: params must be a JSON object schema, without a
// property of that name. Empty params are taken as an empty object schema.
func withFlag(params json.RawMessage) (json.RawMessage, bool) {
	if len(bytes.TrimSpace(params)) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var schema map[string]json.RawMessage
	if json.Unmarshal(params, &schema) != nil || schema == nil {
		return params, false
	}
	if t, ok := schema["type"]; ok && string(bytes.TrimSpace(t)) != `"object"` {
		return params, false
	}
	props := map[string]json.RawMessage{}
	if raw, ok := schema["properties"]; ok {
		if json.Unmarshal(raw, &props) != nil || props == nil {
			return params, false
		}
	}
	if _, taken := props[DirectFlag]; taken {
		return params, false
	}
	props[DirectFlag] = directProperty
	b, err := json.Marshal(props)
	if err != nil {
		return params, false
	}
	schema["properties"] = b
	if _, ok := schema["type"]; !ok {
		schema["type"] = json.RawMessage(`"object"`)
	}
	out, err := json.Marshal(schema)
	if err != nil {
		return params, false
	}
	return out, true
}

// stripFlag takes DirectFlag out of a call's arguments and reports whether
// the model set it (true, or the string "true", which some models send).
// Arguments that are not a JSON object, or lack the flag, come back as they
// are: the tool's own validation then says what is wrong with them.
func stripFlag(raw json.RawMessage) (json.RawMessage, bool) {
	if !bytes.Contains(raw, []byte(DirectFlag)) {
		return raw, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return raw, false
	}
	v, ok := obj[DirectFlag]
	if !ok {
		return raw, false
	}
	delete(obj, DirectFlag)
	out, err := json.Marshal(obj)
	if err != nil {
		return raw, false
	}
	var set bool
	if json.Unmarshal(v, &set) != nil {
		var s string
		set = json.Unmarshal(v, &s) == nil && strings.EqualFold(strings.TrimSpace(s), "true")
	}
	return out, set
}

// structured reports whether a tool's output is structured (an object or an
// array, or a tool that declares an Output struct) rather than text fit to
// show as it is.
func structured(spec toolbox.Spec, output string) bool {
	if len(spec.Output) > 0 {
		return true
	}
	out := strings.TrimSpace(output)
	return (strings.HasPrefix(out, "{") || strings.HasPrefix(out, "[")) && json.Valid([]byte(out))
}

// directAnswer returns the answer made of the round's outputs when the
// model marked every call of the round as the answer and each ran without
// error and returned text; ok is false otherwise, and the synthesizer
// answers as usual. A structured output is not shown raw: tools have no
// formatting of their own yet, so it goes to the synthesizer.
func directAnswer(runs []run) (string, bool) {
	if len(runs) == 0 {
		return "", false
	}
	outs := make([]string, 0, len(runs))
	for _, r := range runs {
		if !r.direct || !r.ran || r.err != nil || !r.text || strings.TrimSpace(r.output) == "" {
			return "", false
		}
		outs = append(outs, strings.TrimSpace(r.output))
	}
	return strings.Join(outs, "\n\n"), true
}

// direct answers with the tools' output, as execute found it (s.answer),
// streamed as it is, and makes no model call.
func (a *Agent) direct(_ context.Context, s *state) (*state, error) {
	s.response = s.answer
	s.directed = true
	if s.req.Stream != nil {
		s.req.Stream(s.response)
	}
	s.note = "answered with the tool output, as the model asked"
	return s, nil
}
