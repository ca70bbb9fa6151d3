package client

import (
	"encoding/json"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot"
	"adaptbot/toolbox"
)

// Tool is one tool of an external MCP server, as the hub last listed it:
// its description (adaptbot.Tool) as the server gave it, with Name the
// server's own name for it, Domain the server and Origin
// adaptbot.OriginRemote; and what the description does not hold, its server
// and its title. Spec is the description as the rest of AdaptBot uses it.
type Tool struct {
	adaptbot.Tool
	Server string
	Title  string
	// ServerDescription describes the tool's server, for routing.
	ServerDescription string
}

// ID returns the tool's name as the rest of AdaptBot uses it: "server/tool".
func (t Tool) ID() string { return t.Server + "/" + t.Name }

// Text returns what the tool does, its title folded into its description.
func (t Tool) Text() string { return Text(t.Title, t.Description) }

// Text returns what a tool does from its title and its description: the
// title folded into the description when it adds something.
func Text(title, description string) string {
	if description == "" {
		return title
	}
	if title != "" && !strings.Contains(description, title) {
		return title + ". " + description
	}
	return description
}

// Spec returns the tool as the toolbox sees it: named "server/tool", its
// title folded into its description, its server its domain.
func (t Tool) Spec() toolbox.Spec {
	s := t.Tool
	s.Name, s.Description, s.Category, s.Origin = t.ID(), t.Text(), t.Server, adaptbot.OriginRemote
	return s
}

// fromSDK converts a listed tool.
func fromSDK(server, serverDesc string, t *sdk.Tool) Tool {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	var output json.RawMessage
	if t.OutputSchema != nil {
		if b, err := json.Marshal(t.OutputSchema); err == nil && string(b) != "null" {
			output = b
		}
	}
	return Tool{
		Tool:   adaptbot.Tool{Name: t.Name, Description: t.Description, Parameters: schema, Output: output, Category: server, Origin: adaptbot.OriginRemote},
		Server: server, Title: title, ServerDescription: serverDesc,
	}
}

// sortTools orders tools by server, then name.
func sortTools(ts []Tool) {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Server != ts[j].Server {
			return ts[i].Server < ts[j].Server
		}
		return ts[i].Name < ts[j].Name
	})
}
