package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/llm"
)

// Plan is what a build would do, decided before it starts, so a person can
// see the tool's name and inputs first.
type Plan struct {
	Op      Op       `json:"op"`
	Tool    string   `json:"tool"`
	Summary string   `json:"summary"`
	Inputs  []string `json:"inputs,omitempty"`
}

// planFunction is decide_build with the inputs the new tool will take: the
// same decision, and what a person wants to see before a build starts. The
// inputs are required, so that a model that follows the schema names them
// (the page and the README promise them before the build).
var planFunction = llm.Function{
	Name:        decideName,
	Description: decideFunction.Description,
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"op":{"type":"string","enum":["CREATE","MODIFY","DELETE"]},` +
		`"tool":{"type":"string","description":"snake_case name: a new one for CREATE, an existing one for MODIFY and DELETE"},` +
		`"summary":{"type":"string","description":"one or two sentences: what the tool must do, what to change, or what goes"},` +
		`"inputs":{"type":"array","items":{"type":"string"},"description":"for CREATE: the parameters the tool will take, each as name (type), e.g. amount (number); empty for MODIFY and DELETE"}},` +
		`"required":["op","tool","summary","inputs"]}`),
}

// Plan asks the model what a build of request would do, without doing it:
// one model call, nothing claimed or written. Build with Request{Op, Tool}
// set from the plan then skips that decision.
func (g *Generator) Plan(ctx context.Context, request string) (*Plan, error) {
	if g.opts.Model == nil {
		return nil, llm.ErrNoModel
	}
	request = strings.TrimSpace(request)
	if request == "" {
		return nil, fmt.Errorf("the request is empty: say what the tool should do")
	}
	raw, err := llm.Structured(ctx, g.opts.Model, decideMessages(request, g.opts.Registry.List()), planFunction)
	if err != nil {
		return nil, err
	}
	var d struct {
		Op      string   `json:"op"`
		Tool    string   `json:"tool"`
		Summary string   `json:"summary"`
		Inputs  []string `json:"inputs"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("decide_build reply %s: %w", clipText(string(raw)), err)
	}
	p := &Plan{Op: Op(strings.ToLower(strings.TrimSpace(d.Op))), Tool: toolName(d.Tool), Summary: strings.TrimSpace(d.Summary)}
	for _, in := range d.Inputs {
		if in = strings.TrimSpace(in); in != "" {
			p.Inputs = append(p.Inputs, in)
		}
	}
	switch p.Op {
	case Create, Modify, Delete:
	default:
		return nil, fmt.Errorf("the model could not tell whether to create, modify or delete a tool (got %q)", d.Op)
	}
	if err := contract.ValidName(p.Tool); err != nil {
		return nil, fmt.Errorf("%q cannot name a tool: %w", d.Tool, err)
	}
	if p.Op != Delete {
		// The words name a tool AdaptBot keeps the name of: the build
		// would refuse it, so the plan says so first.
		if err := adaptbot.ReservedName(p.Tool); err != nil {
			return nil, err
		}
	}
	return p, nil
}
