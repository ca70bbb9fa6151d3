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

// Tool is one tool as listings and search see it: one of AdaptBot's own
// (Server is Local) or one of an external MCP server's. It is the tool's
// description (adaptbot.Tool; an external tool's Name is its name on its
// server) with what a listing adds: the server, the title and, for a local
// tool, its status.
type Tool struct {
	adaptbot.Tool
	Server string
	Title  string
	Status string
	// ServerDescription describes an external tool's server, for ranking.
	ServerDescription string
}

// listingJSON is a Tool as `tools list --format json` writes it: an
// external tool's category, version and origin are its server's, which
// the listing already names, so they are left out.
type listingJSON struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Category    string          `json:"category,omitempty"`
	Version     int             `json:"version,omitempty"`
	Origin      adaptbot.Origin `json:"origin,omitempty"`
	Status      string          `json:"status,omitempty"`
}

// MarshalJSON writes t as listings write it (listingJSON).
func (t Tool) MarshalJSON() ([]byte, error) {
	v := listingJSON{Server: t.Server, Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.Parameters, Status: t.Status}
	v.Category, v.Version, v.Origin = t.own()
	return json.Marshal(v)
}

// own returns the category, version and origin a listing shows: a local
// tool's own; none for an external tool, whose are its server's, which the
// listing already names.
func (t Tool) own() (category string, version int, origin adaptbot.Origin) {
	if t.Remote() {
		return "", 0, ""
	}
	return t.Category, t.Version, t.Origin
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
		Params:            router.ParamsFromSchema(t.Parameters),
	}
}

// listed returns the description t as listings show it, its server
// server (Local for AdaptBot's own tools).
func listed(server, title, status string, t adaptbot.Tool) Tool {
	return Tool{Tool: t, Server: server, Title: title, Status: status}
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
		out = append(out, listed(Local, "", string(e.Status), e.Tool))
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
