package generator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"adaptbot"
	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/registry"
)

// Plan is what a build would do, decided before it starts, so a person can
// see the tool's name and inputs first.
type Plan = adaptbot.Plan

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
		`"inputs":{"type":"array","items":{"type":"string"},"description":"for CREATE: the parameters the tool will take, each as name (type), e.g. amount (number); empty for MODIFY and DELETE"},` +
		`"hosts":{"type":"array","items":{"type":"string"},"description":"for a tool that sends anything but GET or uses a key: the hosts it will reach, e.g. api.example.com; else empty"},` +
		`"secrets":{"type":"array","items":{"type":"string"},"description":"the names of the secrets (keys, tokens, passwords) the tool will use, in upper case, e.g. GITHUB_TOKEN; else empty"}},` +
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
	mine := g.secretNames(ctx)
	raw, err := llm.Structured(ctx, g.opts.Model, planMessages(request, g.opts.Registry.List(), mine), planFunction)
	if err != nil {
		return nil, err
	}
	var d struct {
		Op      string   `json:"op"`
		Tool    string   `json:"tool"`
		Summary string   `json:"summary"`
		Inputs  []string `json:"inputs"`
		Hosts   []string `json:"hosts"`
		Secrets []string `json:"secrets"`
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
		p.Hosts, p.Secrets = plannedHosts(d.Hosts), plannedSecrets(d.Secrets)
		need := make([]SecretInfo, len(p.Secrets))
		for i, name := range p.Secrets {
			need[i] = SecretInfo{Name: name, Hosts: hostNames(p.Hosts)}
		}
		p.MissingSecrets = missingSecrets(need, mine)
	}
	return p, nil
}

// plannedHosts are the hosts a model planned, those that name a host
// (contract.ParseHosts), each once; a URL is taken for its host.
func plannedHosts(list []string) []string {
	var out []string
	for _, h := range list {
		h = strings.TrimSpace(h)
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			h = u.Host
		}
		if hs, err := contract.ParseHosts(h); err == nil && !slices.Contains(out, hs[0]) {
			out = append(out, hs[0])
		}
	}
	return out
}

var notSecretName = regexp.MustCompile(`[^A-Z0-9_]+`)

// plannedSecrets are the secret names a model planned, in the form a
// secret is named (GITHUB_TOKEN for "github token"), each once.
func plannedSecrets(list []string) []string {
	var out []string
	for _, name := range list {
		name = strings.TrimSpace(name)
		name = strings.TrimSuffix(strings.TrimPrefix(name, "{{secret:"), "}}")
		name = strings.Trim(notSecretName.ReplaceAllString(strings.ToUpper(name), "_"), "_")
		if contract.ValidSecretName(name) == nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// planMessages are decide's, with what a plan says of a tool that acts and
// the secrets the person asking can use (names and hosts, no values).
func planMessages(request string, tools []registry.Entry, secrets []SecretInfo) []llm.Message {
	msgs := decideMessages(request, tools)
	var b strings.Builder
	b.WriteString(msgs[0].Content)
	b.WriteString(`
inputs: for CREATE the parameters the tool will take.
hosts and secrets: for a tool that sends anything but GET, or needs a key, token or password (post to a webhook, add a calendar event, open an issue), the hosts it will reach and the names of the secrets it will use; empty for a tool that only computes or reads public data.

The secrets the person asking can use:
`)
	if len(secrets) == 0 {
		b.WriteString("(none)\n")
	}
	for _, s := range secrets {
		fmt.Fprintf(&b, "- %s: for %s\n", s.Name, orNone(strings.Join(s.Hosts, ", ")))
	}
	msgs[0].Content = b.String()
	return msgs
}
