package adaptbot

import (
	"context"
	"encoding/json"
	"time"
)

// The contract of the work that makes and changes tools: builds (the
// generator's), plans, imports, approvals, rollbacks and deletes.

// Op is what a build does to a tool.
type Op string

// The operations a build can perform.
const (
	OpCreate Op = "create"
	OpModify Op = "modify"
	OpDelete Op = "delete"
	// OpRollback is a rollback's, never a build's.
	OpRollback Op = "rollback"
)

// BuildRequest asks for a build: the body of POST /api/tools/build.
type BuildRequest struct {
	// Text is the request in the user's words ("make a tool that converts
	// roman numerals", or a question no tool could answer).
	Text string `json:"request"`
	// Op and Tool, when set, skip the model's decision of what to do and to
	// which tool: the CLI sets them, and so does a page that planned first.
	Op   Op     `json:"op,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Summary, with Op and Tool, is the decided one-sentence task (what
	// the tool must do, or what to change); empty means Text.
	Summary string `json:"summary,omitempty"`
	// Force deletes a tool that other tools use (they are left broken).
	Force bool `json:"force,omitempty"`
}

// Event is one step of a build's progress, for people watching it: the
// "progress" events of a build's, a repair's or a chat's stream.
type Event struct {
	// Stage is one of: decide, write, check, compile, example, repair,
	// register, delete, done, failed.
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

// BuildResult is what a build, a repair or a delete did: the "result"
// event of a build's stream, and the answer of DELETE /api/tools/NAME. A
// build the gate refused is no error: OK is false and Error says why.
type BuildResult struct {
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

// SecretInfo names a secret without its value: the hosts it is pinned to,
// and whether it is the team's (shared) or the person's own.
type SecretInfo struct {
	Name  string   `json:"name"`
	Hosts []string `json:"hosts,omitempty"`
	// Shared: the team's (set by an admin), not the person's own.
	Shared bool `json:"shared,omitempty"`
}

// ExampleResult is one example's run.
type ExampleResult struct {
	Example
	// Output is what the tool returned, clipped; empty if it failed.
	Output string `json:"output,omitempty"`
	// Error says why the example failed, in words a person or a model can
	// act on; empty if it passed.
	Error string `json:"error,omitempty"`
	OK    bool   `json:"ok"`
}

// ExampleReport is the outcome of running a tool's stored examples: the
// answer of POST /api/tools/NAME/test.
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

// CaseResult is how a repaired version did on one failing case.
type CaseResult struct {
	ID    string          `json:"id"`
	Input json.RawMessage `json:"input"`
	// OK: the case now gives a result (CaseOutcomeResult) or a clear error
	// (CaseOutcomeError).
	OK      bool   `json:"ok"`
	Outcome string `json:"outcome"`
	Output  string `json:"output,omitempty"`
	Error   string `json:"error,omitempty"`
	// Example: the case is a stored example from now on.
	Example bool `json:"example,omitempty"`
	// Expect, for a private case that now gives a result, is what later
	// repairs must still give for it: the start of its output. It quotes
	// the case, so it is never sent to the caller.
	Expect string `json:"-"`
}

// The outcomes of a failing case under the repaired version
// (CaseResult.Outcome); a case that still fails says its Failure.
const (
	CaseOutcomeResult = "result" // it gives a result now
	CaseOutcomeError  = "error"  // it gives a clear error now
)

// PlanRequest is the body of POST /api/tools/plan: what a build would be
// asked, in the user's words.
type PlanRequest struct {
	Request string `json:"request"`
}

// Plan is what a build would do, decided before it starts, so a person can
// see the tool's name and inputs first.
type Plan struct {
	Op      Op       `json:"op"`
	Tool    string   `json:"tool"`
	Summary string   `json:"summary"`
	Inputs  []string `json:"inputs,omitempty"`
	// Hosts are the hosts a tool that acts will reach, and Secrets the
	// names of the secrets it will use ({{secret:NAME}}), as planned.
	Hosts   []string `json:"hosts,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// MissingSecrets are the planned secrets the person asking cannot use
	// yet (none of that name, or one pinned to other hosts): the build
	// still runs, and they are to be set before the tool is used.
	MissingSecrets []SecretInfo `json:"missing_secrets,omitempty"`
}

// RollbackRequest is the body of POST /api/tools/NAME/rollback.
type RollbackRequest struct {
	Version int `json:"version"`
}

// RollbackResult is the answer of POST /api/tools/NAME/rollback: Restored
// serves again as Version.
type RollbackResult struct {
	Dependents []ExampleReport `json:"dependents"`
	Pending    bool            `json:"pending"`
	Restored   int             `json:"restored"`
	Tool       string          `json:"tool"`
	Version    int             `json:"version"`
}

// ApproveResult is the answer of POST /api/tools/NAME/approve.
type ApproveResult struct {
	Status  ToolStatus `json:"status"`
	Tool    string     `json:"tool"`
	Version int        `json:"version"`
}

// ImportRequest is the body of POST /api/tools/import: a bundle (the
// .tar.gz of adaptbot tools export --bundle, base64 in JSON) and how to
// bring it in.
type ImportRequest struct {
	Bundle []byte `json:"bundle"`
	// Rename gives some of the bundle's tools new names: bundle name → new
	// name.
	Rename map[string]string `json:"rename,omitempty"`
	// Replace lets a tool replace the tool of the same name here, as its
	// next version.
	Replace bool `json:"replace,omitempty"`
}

// ImportResult is the answer of POST /api/tools/import.
type ImportResult struct {
	Imported []Imported `json:"imported"`
}

// Imported is one tool an import wrote.
type Imported struct {
	Name string `json:"name"`
	// From is its name in the bundle, when it was renamed.
	From    string `json:"from,omitempty"`
	Version int    `json:"version"`
	// Status is ok, or pending when review is on: it waits for approval.
	Status   ToolStatus `json:"status"`
	Replaced bool       `json:"replaced,omitempty"`
}

// BuildService makes and changes tools. Every change needs the caller's
// role for it, takes the tool's lock in a cluster, and is one operation
// with one row and one trace.
type BuildService interface {
	// Build creates, modifies or deletes a tool as req asks; s hears its
	// progress.
	Build(ctx context.Context, req BuildRequest, s Stream) (*BuildResult, error)
	// PrepareBuild is Build for a door that streams: it refuses at once
	// what it can (an empty request, the caller's role, no model, a
	// cluster that cannot take changes).
	PrepareBuild(ctx context.Context, req BuildRequest) (Prepared[*BuildResult], error)
	// Plan says what a build of the request would make, before it starts.
	Plan(ctx context.Context, req PlanRequest) (*Plan, error)
	// Import brings a bundle's tools in, through the gate, all or none.
	Import(ctx context.Context, req ImportRequest) (*ImportResult, error)
	// Approve makes a tool's pending version serve.
	Approve(ctx context.Context, name string) (*ApproveResult, error)
	// Rollback serves an old version again, as a new version.
	Rollback(ctx context.Context, name string, req RollbackRequest) (*RollbackResult, error)
	// Delete removes a tool; force deletes one other tools use.
	Delete(ctx context.Context, name string, force bool) (*BuildResult, error)
}

// Stream is where an operation tells what it does while it runs: a
// build's steps, and a chat's answer piece by piece. A nil func hears
// nothing.
type Stream struct {
	// Progress hears each step of a build (a build's, a repair's, or one
	// a chat asked for).
	Progress func(Event)
	// Text hears each piece of an answer as it is written; the pieces make
	// up the answer.
	Text func(text string)
}

// Prepared is an operation that has begun and passed the checks that
// refuse it at once, so that a door that streams can answer a refusal with
// a status before its first event. Run carries it out against a stream
// and ends it; it must be called once.
type Prepared[T any] interface {
	// Run carries the operation out under ctx (the stream's: it ends when
	// the client goes away), telling s what it does, and returns what the
	// operation returns.
	Run(ctx context.Context, s Stream) (T, error)
}
