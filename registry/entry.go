package registry

import (
	"bytes"
	"slices"

	"adaptbot"
	"adaptbot/contract"
)

// Status says whether the tool's file on disk is the version that serves.
type Status = adaptbot.ToolStatus

// The statuses of an entry.
const (
	OK     Status = "ok"     // the file on disk is loaded and serving
	Broken Status = "broken" // the file on disk fails its checks; the last good version serves, if any
	// Pending: review is on (Options.Review) and a new version waits for a
	// person's approval (Approve). The previous version, if any, serves
	// meanwhile; a new tool serves nothing until approved.
	Pending Status = "pending"
)

// Entry is one tool as tools_registry.json records it (adaptbot.Entry): its
// description, which is the serving version's, and its record; Status and
// LastError describe the file on disk.
type Entry = adaptbot.Entry

// describe sets what e says about the source's own declarations from spec,
// and reports whether anything changed.
func describe(e *Entry, spec *contract.Spec) bool {
	changed := e.Description != spec.Description || !bytes.Equal(e.Parameters, spec.Parameters) ||
		!bytes.Equal(e.Output, spec.Output) || e.TimeoutMS != spec.Timeout.Milliseconds() ||
		e.Network != spec.Network || !slices.Equal(e.Calls, spec.Calls) || e.NoDirect != spec.NoDirect ||
		!slices.Equal(e.Hosts, spec.Hosts)
	e.Description = spec.Description
	e.Parameters = spec.Parameters
	e.Output = spec.Output
	e.TimeoutMS = spec.Timeout.Milliseconds()
	e.Network = spec.Network
	e.Calls = spec.Calls
	e.Hosts = spec.Hosts
	e.NoDirect = spec.NoDirect
	return changed
}

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
