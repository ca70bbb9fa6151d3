package main

// FLOW-BRIDGE: until toolbox.Box (branch h-tool) is merged, this file lets
// the agent see the registry's and the MCP hub's tools as toolbox.Tool.
// Delete it when the Box is wired in app/wire.go.

import (
	"context"
	"encoding/json"
	"fmt"

	"adaptbot/agent"
	"adaptbot/contract"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// toolSource lists tools as the registry and mcp.ToolSet do.
type toolSource interface {
	Serving() []registry.Tool
	Tool(name string) (registry.Tool, bool)
	Len() int
}

// remoteCaller calls an external tool by "server/tool"; *mcp.Hub is one.
type remoteCaller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// bridgeBox is a toolbox over a toolSource: local tools run in the sandbox,
// tools without code on their MCP server.
type bridgeBox struct {
	src    toolSource
	runner sandbox.Runner
	remote remoteCaller
}

var _ agent.Tools = bridgeBox{}

func (b bridgeBox) Len() int { return b.src.Len() }

func (b bridgeBox) Serving() []toolbox.Tool {
	ts := b.src.Serving()
	out := make([]toolbox.Tool, len(ts))
	for i, t := range ts {
		out[i] = bridgeTool{t: t, box: b}
	}
	return out
}

func (b bridgeBox) Tool(name string) (toolbox.Tool, bool) {
	t, ok := b.src.Tool(name)
	if !ok {
		return nil, false
	}
	return bridgeTool{t: t, box: b}, true
}

type bridgeTool struct {
	t   registry.Tool
	box bridgeBox
}

func (t bridgeTool) Spec() toolbox.Spec {
	origin := string(t.t.Origin)
	if t.t.Code == nil {
		origin = toolbox.Remote
	}
	return toolbox.Spec{Name: t.t.Name, Description: t.t.Description, Parameters: t.t.Parameters,
		Domain: t.t.Category, Origin: origin, Version: t.t.Version}
}

func (t bridgeTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if err := contract.Validate(t.t.Parameters, args); err != nil {
		return "", &toolbox.ArgsError{Tool: t.t.Name, Reason: err.Error(), Schema: t.t.Parameters}
	}
	switch {
	case t.t.Code != nil:
		res, err := t.box.runner.Run(ctx, sandbox.Call{Tool: t.t.Name, Source: t.t.Code, Input: args, Timeout: t.t.Timeout()})
		return res.Output, err
	case t.box.remote != nil:
		return t.box.remote.CallTool(ctx, t.t.Name, args)
	}
	return "", fmt.Errorf("tool %s has no code to run and no MCP server to call", t.t.Name)
}
