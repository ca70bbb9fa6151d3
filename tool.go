package adaptbot

import "encoding/json"

// Tool is a tool's description: everything a model, a page or a listing
// needs to know about a tool without calling it, whether it runs in the
// sandbox or on an external MCP server. It is the one description shape;
// the others are views of it:
//
//   - toolbox.Spec is this type, and toolbox.Tool is a Tool plus Call;
//   - a registry entry (registry.Entry) is the stored record of a local
//     tool, and Entry.Spec is its description;
//   - an external MCP server's listed tool (mcp/client.Tool) embeds it;
//   - the command line's listings (catalog.Tool) are made from it.
type Tool struct {
	// Name is the tool's ID: "calculator" for a local tool, "server/tool"
	// for a remote one.
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Output is the JSON schema of the tool's result (an object), when it
	// has one: a local tool that returns an Output struct, or an external
	// tool whose server sent an output schema. Its calls' results are then
	// that object's JSON text.
	Output json.RawMessage `json:"output,omitempty"`
	// Domain is a local tool's category, or a remote tool's server.
	Domain string `json:"domain"`
	// Origin is where the tool came from: one of the Origin constants.
	Origin  string `json:"origin"`
	Version int    `json:"version,omitempty"`
	// Network and Calls say what a local tool reaches, as its source shows
	// (contract.Spec): the network itself, and other tools by name.
	Network bool     `json:"network,omitempty"`
	Calls   []string `json:"calls,omitempty"`
	// Hosts are the hosts a local tool declares it reaches (`const Hosts =
	// "api.example.com, hooks.example.org"`, contract.Spec.Hosts): a tool
	// that sends anything but GET or HEAD, or uses a secret, must declare
	// them, and a request of a tool that declares them goes to no other.
	Hosts []string `json:"hosts,omitempty"`
	// NoDirect says a local tool opted out of direct answers (`const
	// Direct = false`, contract.Spec.NoDirect): its output is never fit to
	// show a person as it is, so the chat never offers to.
	NoDirect bool `json:"no_direct,omitempty"`
}

// The origins of tools. The first four are a local tool's (the registry
// records them); OriginRemote is an external MCP server's tool.
const (
	OriginBuiltin   = "builtin"   // shipped with AdaptBot
	OriginGenerated = "generated" // written by the model through the generator
	OriginManual    = "manual"    // dropped in or edited by hand
	OriginImported  = "imported"  // brought from another AdaptBot in a bundle
	OriginRemote    = "mcp"       // a tool of an external MCP server
)

// Remote reports whether t is an external MCP server's tool.
func (t Tool) Remote() bool { return t.Origin == OriginRemote }
