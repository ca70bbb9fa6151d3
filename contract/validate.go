package contract

import (
	"bytes"
	"encoding/json"
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
type Schema struct{ resolved *jsonschema.Resolved }

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
	return &Schema{resolved: resolved}, nil
}

// Validate checks args, a JSON object, against the schema, as the function
// Validate does.
func (s *Schema) Validate(args json.RawMessage) error {
	return s.validate(args, "arguments are", "arguments must", "arguments do")
}

// ValidateResult checks a tool's result, the JSON text of its Output,
// against the output schema.
func (s *Schema) ValidateResult(result json.RawMessage) error {
	return s.validate(result, "the result is", "the result must", "the result does")
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

// validate checks raw, a JSON object, against s; is, must and does name it
// in errors ("arguments are", "arguments must", "arguments do").
func (s *Schema) validate(raw json.RawMessage, is, must, does string) error {
	var instance any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&instance); err != nil {
		return fmt.Errorf("%s not valid JSON: %w", is, err)
	}
	if _, ok := instance.(map[string]any); !ok {
		return fmt.Errorf("%s be a JSON object, got %s", must, clip.String(string(bytes.TrimSpace(raw)), 200))
	}
	if err := s.resolved.Validate(normalize(instance)); err != nil {
		return fmt.Errorf("%s not match the schema: %w", does, err)
	}
	return nil
}

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
