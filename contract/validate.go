package contract

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
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
	var instance any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&instance); err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, ok := instance.(map[string]any); !ok {
		return fmt.Errorf("arguments must be a JSON object, got %s", bytes.TrimSpace(args))
	}
	if err := s.resolved.Validate(normalize(instance)); err != nil {
		return fmt.Errorf("arguments do not match the schema: %w", err)
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
