package toolbox

import (
	"bytes"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"adaptbot/contract"
)

// checkArgs is "validate the arguments" for every tool and every door: no
// arguments (empty or null) mean {}; anything else must be a JSON object
// that keeps the tool's schema. A schema AdaptBot's validator cannot read
// (readable false: an external server's draft or references) checks only
// that the arguments are a JSON object, and the server's own validation
// does the rest. It returns the arguments to send.
func checkArgs(spec Spec, args json.RawMessage, readable bool) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	fail := func(reason string) error {
		return &ArgsError{Tool: spec.Name, Reason: reason, Schema: spec.Parameters}
	}
	if !readable {
		if !json.Valid(args) || args[0] != '{' {
			return nil, fail("arguments must be a JSON object")
		}
		return args, nil
	}
	if err := contract.Validate(spec.Parameters, args); err != nil {
		return nil, fail(err.Error())
	}
	return args, nil
}

// readableSchema reports whether contract.Validate can use schema: servers
// may publish drafts or references AdaptBot's validator cannot resolve, and
// then the server's own validation is all there is.
func readableSchema(schema json.RawMessage) bool {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return false
	}
	_, err := s.Resolve(nil)
	return err == nil
}
