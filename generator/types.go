package generator

import (
	"encoding/json"
	"errors"
	"time"

	"adaptbot"
)

// Op is what a build does to a tool.
type Op string

// The operations a build can perform.
const (
	Create Op = "create"
	Modify Op = "modify"
	Delete Op = "delete"
	// Rollback is Generator.Rollback's, never a build's.
	Rollback Op = "rollback"
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

// Event is one step of a build's progress, for people watching it.
type Event struct {
	// Stage is one of: decide, write, check, compile, example, repair,
	// register, delete, done, failed (the Stage constants).
	Stage   string `json:"stage"`
	Message string `json:"message"`
	// Attempt and Of place the event in the write-check-repair loop:
	// attempt 2 of 3. They are set from the write stage until the register.
	Attempt int    `json:"attempt,omitempty"`
	Of      int    `json:"of,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// Example and Examples say which example runs, in the example stage:
	// example 1 of 3.
	Example  int `json:"example,omitempty"`
	Examples int `json:"examples,omitempty"`
	// Summary says what the build will make, once decided (write stage).
	Summary string `json:"summary,omitempty"`
	// Inputs are the new source's parameters, "name (type)", once it
	// passes its checks (compile stage), so a person sees what it takes.
	Inputs []string `json:"inputs,omitempty"`
	// Hosts and Secrets are the hosts the new source declares and the
	// secrets it names, with Inputs (compile stage): what it will reach.
	Hosts   []string `json:"hosts,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// Problems are why a repair is needed: the previous attempt's errors
	// (repair stage).
	Problems []string `json:"problems,omitempty"`
}

// Attempt is one try at a tool's source, kept in the build log.
type Attempt struct {
	Number int      `json:"number"`
	Errors []string `json:"errors,omitempty"`
	Source string   `json:"source,omitempty"`
	// Fixed lists the mechanical corrections the gate made to the model's
	// source before checking it (a wrong package name, a missing package
	// comment), so the log shows the source as checked and why it differs.
	Fixed []string `json:"fixed,omitempty"`
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
	// Pending: review is on (ADAPTBOT_REVIEW), so the version built waits
	// for approval and does not serve yet.
	Pending bool `json:"pending,omitempty"`
	// Dependents are the runs of the examples of the tools that use the
	// tool, for a modify or a rollback: with the new version in place of
	// the serving one, before it serves.
	Dependents []ExampleReport `json:"dependents,omitempty"`
	// Cases says, for a repair, how the version made does on each failing
	// case it was given.
	Cases []CaseResult `json:"cases,omitempty"`
	// Hosts and Secrets are what the version made reaches and names: its
	// const Hosts and the {{secret:NAME}} it uses.
	Hosts   []string `json:"hosts,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// MissingSecrets are the secrets the version made uses that the
	// person behind the build cannot use yet (none of that name, or one
	// pinned to other hosts), each with the hosts to pin it to. The build
	// still succeeds; Summary says how to set them.
	MissingSecrets []SecretInfo `json:"missing_secrets,omitempty"`
}

// ErrConflict is returned when a build for the same tool is already running.
var ErrConflict = errors.New("a build for this tool is already running")

// Example is one check a tool must pass, stored with the tool in
// examples.json: the root's adaptbot.Example.
type Example = adaptbot.Example

// ExampleResult is one example's run.
type ExampleResult struct {
	Example
	// Output is what the tool returned, clipped; empty if it failed.
	Output string `json:"output,omitempty"`
	// Error says why the example failed, in words a person or a model can
	// act on; empty if it passed.
	Error string `json:"error,omitempty"`
	OK    bool   `json:"ok"`
	// carried are the hosts the run's requests took each secret to.
	carried map[string][]string
}

// ExampleReport is the outcome of running a tool's stored examples.
type ExampleReport struct {
	Tool    string          `json:"tool"`
	Version int             `json:"version,omitempty"`
	OK      bool            `json:"ok"`
	Results []ExampleResult `json:"results"`
	// Skipped says why no example ran (a tool without examples), when
	// none did.
	Skipped string `json:"skipped,omitempty"`
}

// Failures returns the errors of the examples that failed, in order.
func (r *ExampleReport) Failures() []string {
	var out []string
	for _, res := range r.Results {
		if !res.OK {
			out = append(out, res.Error)
		}
	}
	return out
}

// ErrNoExamples is returned by TestTool for a tool without stored examples
// (a hand-written tool, for one).
var ErrNoExamples = errors.New("the tool has no stored examples")
