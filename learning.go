package adaptbot

import (
	"context"
	"encoding/json"
	"time"
)

// The contract of learning from use: the failure cases of tools, the
// repairs made from them, and the skills proposed from recurring chains of
// tools.

// CaseStatus says where a failure case stands (package failures names the
// statuses).
type CaseStatus string

// The statuses of a failure case.
const (
	// CaseOpen: the tool failed this way; a repair may take it.
	CaseOpen CaseStatus = "open"
	// CaseUnconfirmed: a person's thumbs-down made it (FailFeedback); it
	// counts for nothing until someone confirms it.
	CaseUnconfirmed CaseStatus = "unconfirmed"
	// CaseAccepted: a clear error that a repair was given and kept as the
	// right answer (a division by zero). It counts toward nothing again,
	// and the same refusal of the same arguments in a later version is
	// accepted too.
	CaseAccepted CaseStatus = "accepted"
)

// FailureCase is one way a tool failed: the same tool, version and
// arguments, seen Count times (package failures keeps them).
type FailureCase struct {
	// ID names the case: a hash of tool, version and arguments.
	ID      string `json:"id"`
	Tool    string `json:"tool"`
	Version int    `json:"version"`
	// Args are the arguments as sent, when they were a JSON object small
	// enough to keep whole (Exact); otherwise a JSON string of their start.
	Args json.RawMessage `json:"arguments"`
	// ArgsBytes is how long the arguments were.
	ArgsBytes int `json:"arguments_bytes"`
	// Exact says Args are the whole arguments, so the case can be run again.
	Exact   bool    `json:"exact"`
	Kind    Failure `json:"kind"`
	Message string  `json:"message"`
	// Comment is what a person said of a feedback case.
	Comment   string    `json:"comment,omitempty"`
	Count     int       `json:"count"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// RequestID is the latest request that failed this way; its trace is
	// GET /api/requests/<id>.
	RequestID string     `json:"request_id,omitempty"`
	Status    CaseStatus `json:"status"`
	// FixedIn is the version a repair made that passes this case (it may
	// still wait for approval).
	FixedIn int `json:"fixed_in,omitempty"`
	// Expect is, for a case a repair fixed without making it one of the
	// tool's examples (its input was someone else's words), the start of
	// what that version answered: later repairs must still give it. It
	// quotes the case, so it is its authors' like Args.
	Expect string `json:"expect,omitempty"`

	// Who may read a case's words (Args, Comment, RequestID): their
	// authors and admins. Each is a pseudonym; none, as in the files of
	// releases before them, leaves the words to admins alone.

	// Authors sent these arguments (every sighting sent the same ones),
	// latest last.
	Authors []string `json:"authors,omitempty"`
	// CommentBy wrote Comment.
	CommentBy string `json:"comment_by,omitempty"`
	// RequestBy made the request RequestID.
	RequestBy string `json:"request_by,omitempty"`
	// Withheld says this copy of the case lacks words its reader may not
	// see (arguments, comment or request ID). It is never stored.
	Withheld bool `json:"withheld,omitempty"`
}

// Repairable reports whether a repair may take c: an open case of a kind a
// repair can fix, whose arguments are kept whole.
func (c FailureCase) Repairable() bool {
	return c.Exact && c.Status == CaseOpen && c.Kind.Repairable()
}

// Failing reports whether c is a failure in the narrow sense: a repairable
// case that is not a clear error. An error case is the tool's own answer
// to input it refuses: sometimes the right answer (a division by zero),
// often a missing capability. Only the model can tell, so a repair takes
// clear errors as well (Repairable) and may keep them (CaseAccepted);
// Failing only tells the two apart for people.
func (c FailureCase) Failing() bool { return c.Repairable() && c.Kind != FailError }

// Repair records one repair of a tool, kept with its cases.
type Repair struct {
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"`
	// Auto: the server started it on its own (ADAPTBOT_AUTO_REPAIR).
	Auto bool `json:"auto"`
	// From is the version repaired; Version the one made, if any.
	From    int  `json:"from_version"`
	Version int  `json:"version,omitempty"`
	Pending bool `json:"pending,omitempty"`
	OK      bool `json:"ok"`
	// Cases are the cases it was given; Fixed those the new version passes;
	// Accepted the clear errors it kept as the right answer.
	Cases    []string `json:"cases"`
	Fixed    []string `json:"fixed,omitempty"`
	Accepted []string `json:"accepted,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// FailureReport is what a tool's page and `adaptbot tools failures` show:
// its failure cases, newest first, and its latest repairs (GET
// /api/tools/NAME/failures).
type FailureReport struct {
	Tool string `json:"tool"`
	// Version serves; PendingVersion waits for approval, if any.
	Version        int `json:"version"`
	PendingVersion int `json:"pending_version,omitempty"`
	// Open counts the failures a repair must fix and none has (panics,
	// timeouts, ... and confirmed thumbs-downs); Errors the clear errors
	// the tool answered with, which a repair takes too and may keep;
	// Accepted the clear errors a repair kept as the right answer;
	// Unconfirmed the thumbs-downs waiting for a person.
	Open        int           `json:"open"`
	Errors      int           `json:"errors"`
	Accepted    int           `json:"accepted"`
	Unconfirmed int           `json:"unconfirmed"`
	Cases       []FailureCase `json:"cases"`
	Repairs     []Repair      `json:"repairs"`
	// Keep is how many cases the tool keeps (ADAPTBOT_FAILURES_KEEP).
	Keep int        `json:"keep"`
	Auto AutoStatus `json:"auto_repair"`
}

// AutoStatus says where a tool stands with automatic repair.
type AutoStatus struct {
	Mode Mode `json:"mode"`
	// After is ADAPTBOT_REPAIR_AFTER; SinceChange counts the distinct
	// cases of the serving version that a repair may take.
	After       int    `json:"after"`
	SinceChange int    `json:"since_change"`
	Every       string `json:"every"`
}

// FailureCount is a tool's line in the summary of failure cases.
type FailureCount struct {
	// Open failures a repair must fix, clear errors, and unconfirmed
	// thumbs-downs (see FailureReport).
	Open        int `json:"open"`
	Errors      int `json:"errors"`
	Unconfirmed int `json:"unconfirmed"`
	// Failures counts the failed calls of the cases kept.
	Failures int       `json:"failures"`
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// FailureSummary counts every tool's failure cases, by tool: the answer
// of GET /api/failures.
type FailureSummary struct {
	Tools map[string]FailureCount `json:"tools"`
}

// RepairRequest selects the failure cases a repair takes: their IDs, or
// none for every open case no repair has fixed, newest first. It is the
// body of POST /api/tools/NAME/repair.
type RepairRequest struct {
	Cases []string `json:"cases,omitempty"`
}

// Skill is a chain of tools that recurs in chats, and what became of it.
type Skill struct {
	// Chain is the tools in the order they ran.
	Chain []string `json:"chain"`
	// Seen counts the chats that followed it; Requests are the latest of
	// them that the caller made, all of them for an admin (their traces
	// are GET /api/requests/<id>).
	Seen     int      `json:"seen"`
	Requests []string `json:"requests"`
	// Tool is the skill proposed for it, once there is one; Status says
	// where it stands: counting, building, proposed (waiting for
	// approval), serving, rejected, or failed (the proposal did not pass
	// the gate; Error says why).
	Tool   string    `json:"tool,omitempty"`
	Status string    `json:"status"`
	Error  string    `json:"error,omitempty"`
	At     time.Time `json:"proposed_at,omitzero"`
}

// SkillList is the answer of GET /api/skills: the chains seen, most seen
// first.
type SkillList struct {
	Skills []Skill `json:"skills"`
}

// LearningService is learning from use: a tool's failure cases and what
// people decide of them, repairs made from them, and skills.
type LearningService interface {
	// Failures returns a tool's failure cases and repairs, each case's
	// words (its arguments, comment and request) to their authors and
	// admins alone.
	Failures(ctx context.Context, name string) (*FailureReport, error)
	// FailureSummary counts every tool's cases, for the list of tools.
	FailureSummary(ctx context.Context) (*FailureSummary, error)
	// ConfirmCase makes a thumbs-down case open, for a repair to take.
	ConfirmCase(ctx context.Context, name, id string) (*FailureReport, error)
	// DismissCase removes a case that was not the tool's fault.
	DismissCase(ctx context.Context, name, id string) (*FailureReport, error)
	// Repair rewrites a tool from its failure cases; s hears its progress.
	Repair(ctx context.Context, name string, req RepairRequest, s Stream) (*BuildResult, error)
	// PrepareRepair is Repair for a door that streams: it refuses at once
	// what it can (the caller's role, the tool, the cases, the model, the
	// cluster).
	PrepareRepair(ctx context.Context, name string, req RepairRequest) (Prepared[*BuildResult], error)
	// Skills lists the chains of tools seen in chats, and what became of
	// each.
	Skills(ctx context.Context) (*SkillList, error)
}
