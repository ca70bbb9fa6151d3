package toolkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Caller runs the calls a tool makes to other tools (Call, CallJSON) on the
// host. The host puts one in the context it passes to Execute (WithCaller):
// in a worker process it forwards the call to the server over the worker's
// pipe; on the server it is the toolbox, which checks the call (cycles,
// depth, the callee's arguments) and runs the callee under its own limits.
type Caller interface {
	// CallTool runs the tool name with args, a JSON object, and returns its
	// output as text.
	CallTool(ctx context.Context, name string, args json.RawMessage) (string, error)
}

type callerKey struct{}

// WithCaller returns a context whose Call and CallJSON go through c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller of ctx, or nil when ctx carries none.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// ErrNoCaller is returned (wrapped) by Call and CallJSON when their context
// carries no way to call tools: the tool passed a context other than the one
// Execute was given, or runs where calls are not served.
var ErrNoCaller = errors.New("calling other tools is not available here (pass the ctx that Execute was given)")

// Call runs the tool name with args and returns its output as text: the
// string the tool returned, or the JSON encoding of what else it returned.
// args is what encodes to the callee's JSON arguments: a struct, a
// map[string]any, or a json.RawMessage; nil means none. Name the tool with a
// string literal (a local tool's name, or an external MCP server's tool as
// "server__tool"), so that the gate knows which tools a tool uses.
//
// The host validates the arguments against the callee's schema and runs it
// under its own limits, bounded by what is left of the caller's; a
// cancelled caller cancels it. A cycle (a tool calling a tool that is
// already running in its chain), a chain deeper than the host allows and an
// unknown tool each fail at once with an error that says so. A tool's calls
// run one at a time.
func Call(ctx context.Context, name string, args any) (string, error) {
	c := CallerFrom(ctx)
	if c == nil {
		return "", fmt.Errorf("toolkit.Call(%q): %w", name, ErrNoCaller)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("toolkit.Call(%q): %w", name, err)
	}
	raw, err := encodeArgs(args)
	if err != nil {
		return "", fmt.Errorf("toolkit.Call(%q): %w", name, err)
	}
	return c.CallTool(ctx, name, raw)
}

// CallJSON runs the tool name as Call does and decodes its output, which
// must be JSON (a tool that returns a struct), into out.
func CallJSON(ctx context.Context, name string, args any, out any) error {
	text, err := Call(ctx, name, args)
	if err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return fmt.Errorf("toolkit.CallJSON(%q): the output %q is not the JSON expected (%v); toolkit.Call returns it as text", name, snippet([]byte(text)), err)
	}
	return nil
}

// encodeArgs is the callee's arguments as JSON: a JSON object, or nothing.
func encodeArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		if len(a) == 0 {
			return json.RawMessage("{}"), nil
		}
		if !json.Valid(a) {
			return nil, errors.New("args is a json.RawMessage that is not valid JSON")
		}
		return a, nil
	case []byte, string:
		// Most likely JSON text meant as the arguments; encoding it would
		// send a JSON string, which no schema takes.
		return nil, fmt.Errorf("args is a %T: pass a struct, a map[string]any or a json.RawMessage", args)
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("encode args: %w", err)
	}
	return b, nil
}
