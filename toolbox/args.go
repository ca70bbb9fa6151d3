package toolbox

import (
	"bytes"
	"encoding/json"

	"adaptbot/contract"
)

// checkArgs is "validate the arguments" for every tool and every door: no
// arguments (empty or null) mean {}; anything else must be a JSON object
// that keeps the tool's schema. A tool whose schema AdaptBot's validator
// cannot read (schema nil: an external server's draft or references) gets
// only the check that its arguments are a JSON object, and the server's own
// validation does the rest. It returns the arguments to send.
func checkArgs(spec Spec, schema *contract.Schema, args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	fail := func(reason string) error {
		return &ArgsError{Tool: spec.Name, Reason: reason, Schema: spec.Parameters}
	}
	if schema == nil {
		if !json.Valid(args) || args[0] != '{' {
			return nil, fail("arguments must be a JSON object")
		}
		return args, nil
	}
	if err := schema.Validate(args); err != nil {
		return nil, fail(err.Error())
	}
	return args, nil
}
