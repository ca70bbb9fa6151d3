package generator

import (
	"errors"
	"time"
)

// Op is what a build does to a tool.
type Op string

// The operations a build can perform.
const (
	Create Op = "create"
	Modify Op = "modify"
	Delete Op = "delete"
)

// Request asks for a build.
type Request struct {
	// Text is the user's request in their words ("make a tool that converts
	// roman numerals", or a question no tool could answer).
	Text string `json:"request"`
	// Op and Tool, when set, skip the model's decision (the CLI sets them).
	Op   Op     `json:"op,omitempty"`
	Tool string `json:"tool,omitempty"`
}

// Event is one step of a build's progress, for people watching it.
type Event struct {
	// Stage is one of: decide, write, check, compile, example, repair,
	// register, delete, done, failed.
	Stage   string `json:"stage"`
	Message string `json:"message"`
	Attempt int    `json:"attempt,omitempty"`
	Of      int    `json:"of,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// Attempt is one try at a tool's source, kept in the build log.
type Attempt struct {
	Number int      `json:"number"`
	Errors []string `json:"errors,omitempty"`
	Source string   `json:"source,omitempty"`
}

// Result is what a build did.
type Result struct {
	Op       Op            `json:"op"`
	Tool     string        `json:"tool"`
	OK       bool          `json:"ok"`
	Version  int           `json:"version,omitempty"`
	Attempts int           `json:"attempts"`
	Error    string        `json:"error,omitempty"`
	Summary  string        `json:"summary"`
	Log      []Attempt     `json:"log,omitempty"`
	Duration time.Duration `json:"-"`
}

// ErrConflict is returned when a build for the same tool is already running.
var ErrConflict = errors.New("a build for this tool is already running")
