package registry

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"adaptbot"
	"adaptbot/contract"
)

// Origin says where a tool came from.
type Origin string

// The origins of tools.
const (
	Builtin   Origin = adaptbot.OriginBuiltin   // shipped with AdaptBot
	Generated Origin = adaptbot.OriginGenerated // written by the model through the generator
	Manual    Origin = adaptbot.OriginManual    // dropped in or edited by hand
	Imported  Origin = adaptbot.OriginImported  // brought from another AdaptBot in a bundle
)

// Status says whether the tool's file on disk is the version that serves.
type Status string

// The statuses of an entry.
const (
	OK     Status = "ok"     // the file on disk is loaded and serving
	Broken Status = "broken" // the file on disk fails its checks; the last good version serves, if any
	// Pending: review is on (Options.Review) and a new version waits for a
	// person's approval (Approve). The previous version, if any, serves
	// meanwhile; a new tool serves nothing until approved.
	Pending Status = "pending"
)

// Entry is one tool as tools_registry.json records it. The fields describe the
// version that serves; Status and LastError describe the file on disk.
//
// An entry is the stored record of a local tool; its description, the one
// every other room uses, is Spec. Its fields stay flat, in this order, so
// that the registry file and the API's tool bodies keep their shape.
type Entry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Category    string          `json:"category"`
	Source      string          `json:"source"`
	SHA256      string          `json:"sha256"`
	Parameters  json.RawMessage `json:"parameters"`
	// Output is the JSON schema of the tool's result when it returns an
	// Output struct (contract.Spec.Output).
	Output    json.RawMessage `json:"output,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
	// Network and Calls say what the tool reaches (contract.Spec): the
	// network itself, and other tools by name.
	Network bool     `json:"network,omitempty"`
	Calls   []string `json:"calls,omitempty"`
	// Hosts are the hosts the tool declares it reaches (const Hosts,
	// contract.Spec.Hosts); its requests go to no other.
	Hosts     []string `json:"hosts,omitempty"`
	Version   int      `json:"version"`
	Origin    Origin   `json:"origin"`
	Status    Status   `json:"status"`
	LastError string   `json:"last_error,omitempty"`
	// PendingVersion and PendingSHA256 name the version waiting for
	// approval while Status is Pending; it is kept in history.
	PendingVersion int       `json:"pending_version,omitempty"`
	PendingSHA256  string    `json:"pending_sha256,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Warning says what the last check of the tools that use this one, or
	// of this one against the tools it uses, found wrong (SetWarning): the
	// tool serves, but something it works with fails.
	Warning string `json:"warning,omitempty"`
	// Uses are the tools the serving version calls (contract.Calls), and
	// UsedBy the tools whose serving versions call this one. Both are
	// derived when an entry is read (List, Entry), never stored.
	Uses   []string `json:"uses,omitempty"`
	UsedBy []string `json:"used_by,omitempty"`

	// NoDirect says the tool opted out of direct answers (`const Direct =
	// false`, contract.Spec.NoDirect).
	NoDirect bool `json:"no_direct,omitempty"`
}

// describe sets what e says about the source's own declarations from spec,
// and reports whether anything changed.
func (e *Entry) describe(spec *contract.Spec) bool {
	changed := e.Description != spec.Description || !bytes.Equal(e.Parameters, spec.Schema) ||
		!bytes.Equal(e.Output, spec.Output) || e.TimeoutMS != spec.Timeout.Milliseconds() ||
		e.Network != spec.Network || !slices.Equal(e.Calls, spec.Calls) || e.NoDirect != spec.NoDirect ||
		!slices.Equal(e.Hosts, spec.Hosts)
	e.Description = spec.Description
	e.Parameters = spec.Schema
	e.Output = spec.Output
	e.TimeoutMS = spec.Timeout.Milliseconds()
	e.Network = spec.Network
	e.Calls = spec.Calls
	e.Hosts = spec.Hosts
	e.NoDirect = spec.NoDirect
	return changed
}

// Spec returns the tool's description (adaptbot.Tool): the one place an
// entry becomes what a model, a page or a listing sees.
func (e Entry) Spec() adaptbot.Tool {
	return adaptbot.Tool{
		Name:        e.Name,
		Description: e.Description,
		Parameters:  e.Parameters,
		Output:      e.Output,
		Domain:      e.Category,
		Origin:      string(e.Origin),
		Version:     e.Version,
		Network:     e.Network,
		Calls:       e.Calls,
		Hosts:       e.Hosts,
		NoDirect:    e.NoDirect,
	}
}

// Timeout is the tool's own call limit, or zero for the sandbox default.
func (e Entry) Timeout() time.Duration { return time.Duration(e.TimeoutMS) * time.Millisecond }

// Tool is a serving tool: its entry and the source that runs.
type Tool struct {
	Entry
	Code []byte
}

// file is the registry file's shape.
type file struct {
	Tools []Entry `json:"tools"`
}

// EventKind says what changed.
type EventKind string

// The kinds of change the registry announces.
const (
	Added   EventKind = "added"
	Updated EventKind = "updated"
	Removed EventKind = "removed"
	Failed  EventKind = "failed" // a file on disk failed its checks; nothing changed in what serves
	Held    EventKind = "held"   // a new version waits for approval; nothing changed in what serves
)

// Event is one change, announced to subscribers after it is saved.
type Event struct {
	Kind  EventKind
	Entry Entry
}
