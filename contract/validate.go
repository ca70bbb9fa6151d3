package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"adaptbot/clip"
)

// Validate checks args, a JSON object, against a tool's parameters schema and
// says exactly what is wrong, in words a model can act on when asked again.
func Validate(schema, args json.RawMessage) error {
	s, err := CompileSchema(schema)
	if err != nil {
		return err
	}
	return s.Validate(args)
}

// Schema is a tool's parameters schema, read and resolved once so that many
// calls can be validated against it, concurrently.
type Schema struct {
	resolved *jsonschema.Resolved
	raw      any // the schema decoded, for the words of an error
}

// CompileSchema reads and resolves a tool's parameters schema.
func CompileSchema(schema json.RawMessage) (*Schema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the tool's schema is invalid: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("the tool's schema is invalid: %w", err)
	}
	var raw any
	json.Unmarshal(schema, &raw) //nolint:errcheck // it decoded above
	return &Schema{resolved: resolved, raw: raw}, nil
}

// Validate checks args, a JSON object, against the schema, as the function
// Validate does.
func (s *Schema) Validate(args json.RawMessage) error {
	return s.validate(args, arguments)
}

// ValidateResult checks a tool's result, the JSON text of its Output,
// against the output schema.
func (s *Schema) ValidateResult(res json.RawMessage) error {
	return s.validate(res, theResult)
}

// ValidateResult checks a tool's result, the JSON text of its Output,
// against its output schema (Spec.Output), and says what does not match.
func ValidateResult(output, result json.RawMessage) error {
	s, err := CompileSchema(output)
	if err != nil {
		return err
	}
	return s.ValidateResult(result)
}

// What a schema validates, as its errors name it.
const (
	arguments = "arguments"
	theResult = "the result"
)

// validate checks raw, a JSON object, against s; what says whose (arguments
// or result), for the words of an error. The words say what is wrong in
// the sender's terms (explain.go); the validator's or decoder's own error
// is kept behind them, for the log.
func (s *Schema) validate(raw json.RawMessage, what string) error {
	is, must, does := what+" are", what+" must", what+" do"
	send := ""
	root, _ := s.raw.(map[string]any)
	if what == theResult {
		is, does = what+" is", what+" does"
	} else {
		send = "; send a JSON object such as " + example(root)
	}
	var instance any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := dec.Decode(&instance)
	if err == nil && dec.More() {
		err = errMoreThanOne
	}
	if err != nil {
		return &invalidError{fmt.Sprintf("%s not valid JSON: %s%s", is, explainSyntax(err, raw), send), err}
	}
	if _, ok := instance.(map[string]any); !ok {
		return fmt.Errorf("%s be a JSON object, not %s%s", must, clip.String(string(bytes.TrimSpace(raw)), 200), send)
	}
	if err := s.resolved.Validate(normalize(instance)); err != nil {
		return &invalidError{fmt.Sprintf("%s not match the schema: %s", does, explainInvalid(err, s.raw, what)), err}
	}
	return nil
}

// errMoreThanOne is JSON text that holds more than one value.
var errMoreThanOne = errors.New("more than one JSON value")

// invalidError is a value the schema refused, in words (msg), with the
// validator's own error behind it.
type invalidError struct {
	msg string
	err error
}

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return e.err }

// normalize turns json.Number into float64 or int64, which the validator
// understands, keeping integers exact.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normalize(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = normalize(x)
		}
		return v
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return v
}
