package client

import (
	"encoding/json"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/toolbox"
)

// Tool is one tool of an external MCP server, as the hub last listed it.
type Tool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema is the schema of the tool's structured results, if the
	// server sent one.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// ServerDescription describes the tool's server, for routing.
	ServerDescription string `json:"-"`
}

// ID returns the tool's name as the rest of AdaptBot uses it: "server/tool".
func (t Tool) ID() string { return t.Server + "/" + t.Name }

// Text returns what the tool does, its title folded into its description.
func (t Tool) Text() string {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	} else if t.Title != "" && !strings.Contains(desc, t.Title) {
		desc = t.Title + ". " + desc
	}
	return desc
}

// Spec returns the tool as the toolbox sees it: named "server/tool", its
// server its domain.
func (t Tool) Spec() toolbox.Spec {
	return toolbox.Spec{Name: t.ID(), Description: t.Text(), Parameters: t.InputSchema, Output: t.OutputSchema, Domain: t.Server, Origin: toolbox.Remote}
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
	return Tool{Server: server, Name: t.Name, Title: title, Description: t.Description, InputSchema: schema, OutputSchema: output, ServerDescription: serverDesc}
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
