package mcp

import (
	"encoding/json"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"adaptbot/registry"
	"adaptbot/router"
	"adaptbot/toolbox"
)

// Tool is one tool as listings and search see it: one of AdaptBot's own
// (Server is Local) or one of an external MCP server's.
type Tool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`

	// Category, Version, Origin and Status describe AdaptBot's own tools.
	Category string `json:"category,omitempty"`
	Version  int    `json:"version,omitempty"`
	Origin   string `json:"origin,omitempty"`
	Status   string `json:"status,omitempty"`

	// ServerDescription describes an external tool's server, for routing.
	ServerDescription string `json:"-"`
}

// ID returns the tool's name as the agent and the command line use it:
// "server/tool" for an external tool, the bare name for a local one.
func (t Tool) ID() string {
	if t.Server == Local || t.Server == "" {
		return t.Name
	}
	return t.Server + "/" + t.Name
}

// Doc returns the router document of an external tool: its server is its
// domain.
func (t Tool) Doc() router.Doc {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	} else if t.Title != "" && !strings.Contains(desc, t.Title) {
		desc = t.Title + ". " + desc
	}
	return router.Doc{
		Server:            t.Server,
		ServerDescription: t.ServerDescription,
		Name:              t.Name,
		Description:       desc,
		Params:            router.ParamsFromSchema(t.InputSchema),
	}
}

// Spec returns an external tool as the toolbox sees it: named
// "server/tool", its server its domain, its title folded into its
// description as the router's document does.
func (t Tool) Spec() toolbox.Spec {
	return toolbox.Spec{Name: t.ID(), Description: t.Doc().Description, Parameters: t.InputSchema, Domain: t.Server, Origin: toolbox.Remote}
}

// LocalTools returns AdaptBot's own tools as listings show them: the
// entries that have a version that serves (a broken entry whose last good
// version still serves is included, with its status).
func LocalTools(entries []registry.Entry) []Tool {
	out := make([]Tool, 0, len(entries))
	for _, e := range entries {
		if e.Version == 0 && e.Status != registry.OK {
			continue // never passed its checks: nothing serves
		}
		out = append(out, Tool{
			Server:      Local,
			Name:        e.Name,
			Description: e.Description,
			InputSchema: e.Parameters,
			Category:    e.Category,
			Version:     e.Version,
			Origin:      string(e.Origin),
			Status:      string(e.Status),
		})
	}
	return out
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
	return Tool{Server: server, Name: t.Name, Title: title, Description: t.Description, InputSchema: schema, ServerDescription: serverDesc}
}

// sortTools orders tools by server (AdaptBot's own first), then name.
func sortTools(ts []Tool) {
	sort.SliceStable(ts, func(i, j int) bool { return lessByServer(ts[i], ts[j]) })
}

func lessByServer(a, b Tool) bool {
	if a.Server != b.Server {
		if a.Server == Local || b.Server == Local {
			return a.Server == Local
		}
		return a.Server < b.Server
	}
	return a.Name < b.Name
}
