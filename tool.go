package adaptbot

import (
	"context"
	"encoding/json"
	"time"
)

// Tool is a tool's description: everything a model, a page or a listing
// needs to know about a tool without calling it, whether it runs in the
// sandbox or on an external MCP server. It is the one description shape;
// the others embed it or are it:
//
//   - toolbox.Spec is this type, and toolbox.Tool is a Tool plus Call;
//   - a local tool's record (Entry, registry.Entry) embeds it, and so
//     does what the API shows of one (ToolInfo);
//   - what a source declares (contract.Spec) embeds it;
//   - an external MCP server's listed tool (mcp/client.Tool) embeds it;
//   - the command line's listings (catalog.Tool) embed it.
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
	// Category is what the tool is about: a local tool's category (its
	// source's `const Category`), or a remote tool's server. The
	// description says "domain" for it, as it always has; an entry says
	// "category".
	Category string `json:"domain"`
	Origin   Origin `json:"origin"`
	Version  int    `json:"version,omitempty"`
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

// Origin says where a tool came from.
type Origin string

// The origins of tools. The first four are a local tool's (the registry
// records them); OriginRemote is an external MCP server's tool.
const (
	OriginBuiltin   Origin = "builtin"   // shipped with AdaptBot
	OriginGenerated Origin = "generated" // written by the model through the generator
	OriginManual    Origin = "manual"    // dropped in or edited by hand
	OriginImported  Origin = "imported"  // brought from another AdaptBot in a bundle
	OriginRemote    Origin = "mcp"       // a tool of an external MCP server
)

// Remote reports whether t is an external MCP server's tool.
func (t Tool) Remote() bool { return t.Origin == OriginRemote }

// ToolStatus says whether a local tool's file on disk is the version that
// serves (registry.OK, Broken, Pending).
type ToolStatus string

// Entry is a local tool as the registry records it in tools_registry.json,
// and as the API shows it: its description (Tool), which is the serving
// version's, and its record. Status and LastError describe the file on
// disk.
//
// It travels flat, with the keys in the order the registry file has always
// had them (its category as "category", its version always written);
// MarshalJSON and UnmarshalJSON keep that shape, which registry's
// testdata/entry.json pins.
type Entry struct {
	Tool
	// Source is the tool's file, relative to the tools' folder's parent.
	Source string
	SHA256 string
	// TimeoutMS is the tool's own call limit, 0 for the sandbox default.
	TimeoutMS int64
	Status    ToolStatus
	LastError string
	// PendingVersion and PendingSHA256 name the version waiting for
	// approval while Status is pending; it is kept in history.
	PendingVersion int
	PendingSHA256  string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Warning says what the last check of the tools that use this one, or
	// of this one against the tools it uses, found wrong: the tool serves,
	// but something it works with fails.
	Warning string
	// Uses are the tools the serving version calls, and UsedBy the tools
	// whose serving versions call this one. Both are derived when an entry
	// is read, never stored.
	Uses   []string
	UsedBy []string
}

// Timeout is the tool's own call limit, or zero for the sandbox default.
func (e Entry) Timeout() time.Duration { return time.Duration(e.TimeoutMS) * time.Millisecond }

// entryJSON is an Entry as it travels: flat, in the registry file's order.
type entryJSON struct {
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	Category       string          `json:"category"`
	Source         string          `json:"source"`
	SHA256         string          `json:"sha256"`
	Parameters     json.RawMessage `json:"parameters"`
	Output         json.RawMessage `json:"output,omitempty"`
	TimeoutMS      int64           `json:"timeout_ms,omitempty"`
	Network        bool            `json:"network,omitempty"`
	Calls          []string        `json:"calls,omitempty"`
	Hosts          []string        `json:"hosts,omitempty"`
	Version        int             `json:"version"`
	Origin         Origin          `json:"origin"`
	Status         ToolStatus      `json:"status"`
	LastError      string          `json:"last_error,omitempty"`
	PendingVersion int             `json:"pending_version,omitempty"`
	PendingSHA256  string          `json:"pending_sha256,omitempty"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	Warning        string          `json:"warning,omitempty"`
	Uses           []string        `json:"uses,omitempty"`
	UsedBy         []string        `json:"used_by,omitempty"`
	NoDirect       bool            `json:"no_direct,omitempty"`
}

// MarshalJSON writes e flat, in the registry file's order.
func (e Entry) MarshalJSON() ([]byte, error) {
	return json.Marshal(entryJSON{Name: e.Name, Description: e.Description, Category: e.Category, Source: e.Source, SHA256: e.SHA256,
		Parameters: e.Parameters, Output: e.Output, TimeoutMS: e.TimeoutMS, Network: e.Network, Calls: e.Calls, Hosts: e.Hosts, Version: e.Version,
		Origin: e.Origin, Status: e.Status, LastError: e.LastError, PendingVersion: e.PendingVersion, PendingSHA256: e.PendingSHA256,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Warning: e.Warning, Uses: e.Uses, UsedBy: e.UsedBy, NoDirect: e.NoDirect})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var w entryJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Entry{Tool: Tool{Name: w.Name, Description: w.Description, Parameters: w.Parameters, Output: w.Output, Category: w.Category,
		Origin: w.Origin, Version: w.Version, Network: w.Network, Calls: w.Calls, Hosts: w.Hosts, NoDirect: w.NoDirect},
		Source: w.Source, SHA256: w.SHA256, TimeoutMS: w.TimeoutMS, Status: w.Status, LastError: w.LastError,
		PendingVersion: w.PendingVersion, PendingSHA256: w.PendingSHA256, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt,
		Warning: w.Warning, Uses: w.Uses, UsedBy: w.UsedBy}
	return nil
}

// ToolInfo is a local tool as a person inspects it (GET /api/tools/NAME,
// the tool's page, `adaptbot tools show`): its entry, whether it serves,
// its source and its stored examples.
type ToolInfo struct {
	Entry
	// Code is the serving version's source, or, when none serves, the
	// source on disk that does not (GET of one tool).
	Code    string `json:"code,omitempty"`
	Serving bool   `json:"serving"`
	// PendingCode is the source of the version that waits for approval.
	PendingCode string          `json:"pending_code,omitempty"`
	Examples    json.RawMessage `json:"examples,omitempty"`
	// Tier is the tier its serving version runs on, and why not the native
	// one; absent where the server has no native tier.
	Tier *TierStatus `json:"tier,omitempty"`
	// Trusts are the admins' trusts of its requests to hosts (GET of one
	// tool): those of an older version are undone.
	Trusts []Trust `json:"trusts,omitempty"`
}

// toolInfoJSON is what ToolInfo adds to its entry, as it travels after
// the entry's keys.
type toolInfoJSON struct {
	Code        string          `json:"code,omitempty"`
	Serving     bool            `json:"serving"`
	PendingCode string          `json:"pending_code,omitempty"`
	Examples    json.RawMessage `json:"examples,omitempty"`
	Tier        *TierStatus     `json:"tier,omitempty"`
	Trusts      []Trust         `json:"trusts,omitempty"`
}

// MarshalJSON writes t flat: the entry's keys (Entry.MarshalJSON), then
// what ToolInfo adds.
func (t ToolInfo) MarshalJSON() ([]byte, error) {
	entry, err := t.Entry.MarshalJSON()
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(toolInfoJSON{Code: t.Code, Serving: t.Serving, PendingCode: t.PendingCode, Examples: t.Examples, Tier: t.Tier, Trusts: t.Trusts})
	if err != nil {
		return nil, err
	}
	return joinObjects(entry, rest), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (t *ToolInfo) UnmarshalJSON(b []byte) error {
	var rest toolInfoJSON
	if err := json.Unmarshal(b, &t.Entry); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &rest); err != nil {
		return err
	}
	t.Code, t.Serving, t.PendingCode, t.Examples, t.Tier, t.Trusts = rest.Code, rest.Serving, rest.PendingCode, rest.Examples, rest.Tier, rest.Trusts
	return nil
}

// TierStatus is where a tool version stands with the native tier: the
// tier its calls run on and, when that is not the native one, why
// (package native's states).
type TierStatus struct {
	Tier   string `json:"tier"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// joinObjects is the JSON object with a's keys, then b's: both are objects,
// and b has at least one key.
func joinObjects(a, b []byte) []byte {
	if len(a) == 2 { // {}
		return b
	}
	return append(append(a[:len(a)-1:len(a)-1], ','), b[1:]...)
}

// ToolList is the answer of GET /api/tools: every local tool, serving or
// not.
type ToolList struct {
	Count int        `json:"count"`
	Tools []ToolInfo `json:"tools"`
}

// Version is one kept version of a tool.
type Version struct {
	Version int       `json:"version"`
	SHA256  string    `json:"sha256"`
	SavedAt time.Time `json:"saved_at"`
	Current bool      `json:"current"`
	// Pending: this version waits for approval.
	Pending bool `json:"pending,omitempty"`
	// Note says what the version changed, when whoever made it said (a
	// repair lists the failure cases it fixed).
	Note string `json:"note,omitempty"`
}

// VersionList is the answer of GET /api/tools/NAME/versions: the kept
// versions, oldest first.
type VersionList struct {
	Tool     string    `json:"tool"`
	Versions []Version `json:"versions"`
}

// Diff is a unified diff between two kept versions of a tool: the answer
// of GET /api/tools/NAME/diff.
type Diff struct {
	Tool string `json:"tool"`
	From int    `json:"from"`
	To   int    `json:"to"`
	Diff string `json:"diff"`
	Same bool   `json:"same"`
}

// RunResult is a direct run's answer: POST /api/tools/NAME/run.
type RunResult struct {
	Tool      string  `json:"tool"`
	Version   int     `json:"version,omitempty"`
	Output    string  `json:"output"`
	Ms        float64 `json:"ms"`
	RequestID string  `json:"request_id"`
	// Approvals are the approvals the tool's requests asked for.
	Approvals []ApprovalRecord `json:"approvals,omitempty"`
}

// RemoteTools are the external MCP servers and their tools, as the hub
// last listed them: each tool's description, Name its name on its server,
// Category its server.
type RemoteTools struct {
	Servers []string
	Tools   []Tool
}

// ToolService reads and runs tools: what anyone who may read the tools
// sees of them, and a direct run (the caller's role permitting).
type ToolService interface {
	// Tools lists the local tools, serving or not.
	Tools(ctx context.Context) (*ToolList, error)
	// Tool returns one local tool with its source and examples.
	Tool(ctx context.Context, name string) (*ToolInfo, error)
	// Versions lists a tool's kept versions.
	Versions(ctx context.Context, name string) (*VersionList, error)
	// Diff compares two kept versions: to 0 means the newest, from 0 the
	// one before to.
	Diff(ctx context.Context, name string, from, to int) (*Diff, error)
	// Run runs a tool directly, without a model; args is a JSON object.
	Run(ctx context.Context, name string, args json.RawMessage) (*RunResult, error)
	// Test re-runs a tool's stored examples; a failing example is no
	// error, the report says which.
	Test(ctx context.Context, name string) (*ExampleReport, error)
}
