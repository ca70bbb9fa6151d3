package toolbox

import (
	"bytes"
	"encoding/json"
	"sync"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/sandbox"
)

// A tool with an output schema (Spec.Output) promises that each result is
// that object's JSON text. The promise is checked in the call path, as the
// arguments are, before any door sees the result: a run's row, a chat, a
// failure case and an MCP client's structuredContent all see the same
// verdict. A result that breaks it is the tool's failure, a *sandbox.Error
// of kind adaptbot.FailBadOutput, so it counts (adaptbot.FailureOf) and is learned from as
// a bad output.

// outputSchema compiles a tool version's output schema once, at its first
// result; nil without one. It lives on the *Local, so it is dropped with
// the version.
func outputSchema(output json.RawMessage) func() (*contract.Schema, error) {
	if len(bytes.TrimSpace(output)) == 0 {
		return func() (*contract.Schema, error) { return nil, nil }
	}
	return sync.OnceValues(func() (*contract.Schema, error) { return contract.CompileSchema(output) })
}

// checkOutput checks out, the result of spec's tool, against the compiled
// spec.Output (nil for none).
func checkOutput(spec Spec, out string, compiled func() (*contract.Schema, error)) error {
	schema, err := compiled()
	if err == nil && schema == nil {
		return nil
	}
	if err == nil {
		err = schema.ValidateResult(json.RawMessage(out))
	}
	if err != nil {
		return &sandbox.Error{Tool: spec.Name, Kind: adaptbot.FailBadOutput, Msg: "its result does not match its output schema: " + err.Error()}
	}
	return nil
}

// CheckOutput checks out, a successful result of t, against t's output
// schema, with the error a Local's Call gives for a result that breaks it.
// A Local checks its results itself, with the schema it compiled once, so
// for one there is nothing left to check; any other tool's schema is
// compiled for the check.
func CheckOutput(t Tool, out string) error {
	if _, ok := t.(*Local); ok {
		return nil
	}
	spec := t.Spec()
	return checkOutput(spec, out, outputSchema(spec.Output))
}
