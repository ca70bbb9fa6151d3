package toolbox

import (
	"context"
	"encoding/json"
	"sync"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/telemetry"
)

// Caller calls a tool of an external MCP server with arguments already
// validated; the MCP hub is one.
type Caller interface {
	Call(ctx context.Context, server, tool string, args json.RawMessage) (string, error)
}

// External is a tool of an external MCP server, named "server/tool", whose
// calls go through the hub.
type External struct {
	spec   Spec
	server string
	tool   string
	schema func() *contract.Schema // resolved at the first call; nil: AdaptBot's validator cannot read it
	hub    Caller
	set    *Set // the Set whose tool this is; nil for an External on its own
}

// NewExternal returns the external tool spec (its Name "server/tool"),
// called through hub. A schema AdaptBot cannot read is left to the server
// to enforce; the arguments must still be a JSON object.
func NewExternal(spec Spec, hub Caller) *External {
	server, tool, _ := SplitName(spec.Name)
	spec.Origin = adaptbot.OriginRemote
	if spec.Category == "" {
		spec.Category = server
	}
	schema := sync.OnceValue(func() *contract.Schema {
		s, err := contract.CompileSchema(spec.Parameters)
		if err != nil {
			return nil // left to the server
		}
		return s
	})
	return &External{spec: spec, server: server, tool: tool, schema: schema, hub: hub}
}

// Spec returns the tool's spec.
func (r *External) Spec() Spec { return r.spec }

// Call validates args as Local.Call does, then calls the tool on its
// server; through a Set, the call is recorded and observed as Local.Call's.
func (r *External) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if r.set == nil {
		return r.run(ctx, args)
	}
	return r.set.invoke(ctx, r.spec, args, r.run)
}

// run is one call on the server, in its execute_tool span.
func (r *External) run(ctx context.Context, args json.RawMessage) (out string, err error) {
	ctx, span := telemetry.StartTool(ctx, r.spec.Name, true, args)
	defer func() { span.End(out, outcome(err), err) }()
	args, err = checkArgs(r.spec, r.schema(), args)
	if err != nil {
		return "", err
	}
	return r.hub.Call(ctx, r.server, r.tool, args)
}

func (r *External) same(o *External) bool {
	return r.spec.Description == o.spec.Description && r.spec.Category == o.spec.Category &&
		string(r.spec.Parameters) == string(o.spec.Parameters) && string(r.spec.Output) == string(o.spec.Output)
}

var _ Tool = (*External)(nil)
