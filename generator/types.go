package generator

import (
	"encoding/json"
	"errors"

	"adaptbot"
)

// Op is what a build does to a tool (adaptbot.Op).
type Op = adaptbot.Op

// The operations a build can perform, as the root names them.
const (
	Create = adaptbot.OpCreate
	Modify = adaptbot.OpModify
	Delete = adaptbot.OpDelete
	// Rollback is Generator.Rollback's, never a build's.
	Rollback = adaptbot.OpRollback
)

// Request asks for a build.
type Request struct {
	// Text is the user's request in their words ("make a tool that converts
	// roman numerals", or a question no tool could answer).
	Text string `json:"request"`
	// Op and Tool, when set, skip the model's decision: the CLI sets them,
	// and so does chat, whose classifier has already decided.
	Op   Op     `json:"op,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Summary, with Op and Tool, is the decided one-sentence task (what
	// the tool must do, or what to change); empty means Text.
	Summary string `json:"summary,omitempty"`
	// Force deletes a tool that other tools use (they are left broken);
	// without it such a delete fails with a *registry.InUseError.
	Force bool `json:"force,omitempty"`
	// Permit, when set, is asked once the operation and the tool are
	// decided, before anything is claimed or written: an error refuses the
	// build and Build returns it. The service layer sets it, so that a
	// request whose words decide on a delete needs the right to delete.
	Permit func(op Op, tool string) error `json:"-"`
	// Hold keeps the new version waiting for approval whatever the
	// registry's review setting (a skill the server proposes on its own).
	Hold bool `json:"-"`
	// Note, when set, is kept with the version in history (a proposed
	// skill names the chats it came from).
	Note string `json:"-"`
	// Private are inputs drawn from people's words that the build may show
	// the model but not publish: an example the model writes with one of
	// them as its input is not stored (see private.go). A skill proposed
	// from chats sets them.
	Private []json.RawMessage `json:"-"`
	// fix, set by Repair, makes the modify a repair from failure cases.
	fix *caseFix
}

// Event is one step of a build's progress, for people watching it
// (adaptbot.Event); its Stage is one of the Stage constants.
type Event = adaptbot.Event

// Attempt is one try at a tool's source, kept in the build log.
type Attempt = adaptbot.Attempt

// Result is what a build did (adaptbot.BuildResult).
type Result = adaptbot.BuildResult

// ErrConflict is returned when a build for the same tool is already running.
var ErrConflict = errors.New("a build for this tool is already running")

// Example is one check a tool must pass, stored with the tool in
// examples.json: the root's adaptbot.Example.
type Example = adaptbot.Example

// ExampleResult is one example's run.
type ExampleResult = adaptbot.ExampleResult

// ExampleReport is the outcome of running a tool's stored examples.
type ExampleReport = adaptbot.ExampleReport

// ErrNoExamples is returned by TestTool for a tool without stored examples
// (a hand-written tool, for one).
var ErrNoExamples = errors.New("the tool has no stored examples")
