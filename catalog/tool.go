package catalog

import (
	"encoding/json"
	"sort"

	"adaptbot"
	"adaptbot/mcp/client"
	"adaptbot/mcp/config"
	"adaptbot/registry"
	"adaptbot/router"
)

// Local is the server name of AdaptBot's own tools in listings and search
// results; no configured MCP server may take it.
const Local = config.Local

// Tool is one tool as listings and search see it, and as `tools list
// --format json` writes it: one of AdaptBot's own (Server is Local) or one
// of an external MCP server's. It is a view of the tool's description
// (adaptbot.Tool), made by listed alone.
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

	// ServerDescription describes an external tool's server, for ranking.
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

// doc returns the router document of t, its server its domain.
func (t Tool) doc() router.Doc {
	return router.Doc{
		Server:            t.Server,
		ServerDescription: t.ServerDescription,
		Name:              t.Name,
		Description:       client.Text(t.Title, t.Description),
		Params:            router.ParamsFromSchema(t.InputSchema),
	}
}

// listed returns the description t as listings show it, its server
// server (Local for AdaptBot's own tools). An external tool's domain and
// origin are its server's, which the listing already names.
func listed(server, title, status string, t adaptbot.Tool) Tool {
	v := Tool{Server: server, Name: t.Name, Title: title, Description: t.Description, InputSchema: t.Parameters, Status: status}
	if !t.Remote() {
		v.Category, v.Version, v.Origin = t.Domain, t.Version, t.Origin
	}
	return v
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
		out = append(out, listed(Local, "", string(e.Status), e.Spec()))
	}
	return out
}

// external returns the hub's tools as listings show them.
func external(ts []client.Tool) []Tool {
	out := make([]Tool, len(ts))
	for i, t := range ts {
		out[i] = listed(t.Server, t.Title, "", t.Tool)
		out[i].ServerDescription = t.ServerDescription
	}
	return out
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
