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

// SplitID splits "server/tool" into its halves; ok is false for a bare name
// (a local tool). Server names hold no '/', so the first one splits.
func SplitID(id string) (server, tool string, ok bool) {
	return strings.Cut(id, "/")
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

// Entry returns t as a registry entry, so that code written for local tools
// (the agent's prompts and argument extraction) can show an external one:
// its name is "server/tool", its category the server, and it has no source.
func (t Tool) Entry() registry.Entry {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return registry.Entry{Name: t.ID(), Description: desc, Category: t.Server, Parameters: t.InputSchema, Origin: "mcp", Status: registry.OK}
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

// ToolSource is where ToolSet finds AdaptBot's own tools; the registry is
// one.
type ToolSource interface {
	Serving() []registry.Tool
	Tool(name string) (registry.Tool, bool)
	Len() int
}

// ToolSet is AdaptBot's own tools and the hub's as one set, named as the
// agent names them: an external tool is "server/tool", with its server as
// its category and no Code (it runs through Hub.CallTool, not the sandbox).
// It has the method set of agent.Tools.
type ToolSet struct {
	Local ToolSource
	Hub   *Hub // nil: AdaptBot's own tools only
}

// Serving returns the local serving tools, then the external ones as last
// listed.
func (s ToolSet) Serving() []registry.Tool {
	out := s.Local.Serving()
	if s.Hub != nil {
		for _, t := range s.Hub.Tools() {
			out = append(out, registry.Tool{Entry: t.Entry()})
		}
	}
	return out
}

// Len returns how many tools serve, local and external, without copying them.
func (s ToolSet) Len() int {
	n := s.Local.Len()
	if s.Hub != nil {
		n += s.Hub.toolCount()
	}
	return n
}

// toolCount returns how many external tools were last listed.
func (h *Hub) toolCount() int {
	n := 0
	for _, c := range h.conns {
		c.mu.Lock()
		n += len(c.tools)
		c.mu.Unlock()
	}
	return n
}

// Tool returns the tool named name: "server/tool" for an external one.
func (s ToolSet) Tool(name string) (registry.Tool, bool) {
	server, tool, external := SplitID(name)
	if !external {
		return s.Local.Tool(name)
	}
	if s.Hub == nil {
		return registry.Tool{}, false
	}
	t, ok := s.Hub.Tool(server, tool)
	if !ok {
		return registry.Tool{}, false
	}
	return registry.Tool{Entry: t.Entry()}, true
}
