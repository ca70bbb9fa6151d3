package api

import (
	"encoding/json"
	"time"

	"adaptbot"
)

// The bodies of the HTTP API, as they travel. The server's own types
// (generator.Result, service.FailureReport, ...) encode to exactly these
// shapes; app's TestAPIBodiesMatchTheServer holds them in step, field for
// field, so a client that decodes and re-encodes an answer loses nothing.

// BuildRequest is the body of POST /api/tools/build.
type BuildRequest struct {
	// Text is the request in the user's words.
	Text string `json:"request"`
	// Op (create, modify, delete) and Tool, when set, skip the model's
	// decision of what to do and to which tool.
	Op   string `json:"op,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Summary, with Op and Tool, is the decided one-sentence task.
	Summary string `json:"summary,omitempty"`
	// Force deletes a tool other tools use, leaving them broken.
	Force bool `json:"force,omitempty"`
}

// The operations of a BuildRequest and a BuildResult.
const (
	OpCreate   = "create"
	OpModify   = "modify"
	OpDelete   = "delete"
	OpRollback = "rollback"
)

// Event is one step of a build's progress: the "progress" events of a
// build's or a repair's stream.
type Event struct {
	// Stage is one of: decide, write, check, compile, example, repair,
	// register, delete, done, failed.
	Stage   string `json:"stage"`
	Message string `json:"message"`
	// Attempt and Of place the event in the write-check-repair loop.
	Attempt int    `json:"attempt,omitempty"`
	Of      int    `json:"of,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// Example and Examples say which example runs (example stage).
	Example  int `json:"example,omitempty"`
	Examples int `json:"examples,omitempty"`
	// Summary says what the build will make, once decided.
	Summary string `json:"summary,omitempty"`
	// Inputs are the new source's parameters, "name (type)".
	Inputs []string `json:"inputs,omitempty"`
	// Problems are why a repair of the source is needed.
	Problems []string `json:"problems,omitempty"`
}

// Attempt is one try at a tool's source, in a build's log.
type Attempt struct {
	Number int      `json:"number"`
	Errors []string `json:"errors,omitempty"`
	Source string   `json:"source,omitempty"`
	// Fixed lists the mechanical corrections made to the model's source.
	Fixed []string `json:"fixed,omitempty"`
}

// BuildResult is what a build, a repair or a delete did: the "result"
// event of a stream, and the answer of DELETE /api/tools/NAME.
type BuildResult struct {
	Op       string    `json:"op"`
	Tool     string    `json:"tool"`
	OK       bool      `json:"ok"`
	Version  int       `json:"version,omitempty"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error,omitempty"`
	Summary  string    `json:"summary"`
	Log      []Attempt `json:"log,omitempty"`
	// Pending: the version waits for approval and does not serve yet.
	Pending bool `json:"pending,omitempty"`
	// Dependents are the runs of the examples of the tools that use it.
	Dependents []ExampleReport `json:"dependents,omitempty"`
	// Cases says, for a repair, how the new version does on each case.
	Cases []CaseResult `json:"cases,omitempty"`
}

// Example is one check a tool must pass: an input and what the output
// must contain, or match (adaptbot.Example).
type Example = adaptbot.Example

// ExampleResult is one example's run.
type ExampleResult struct {
	Example
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	OK     bool   `json:"ok"`
}

// ExampleReport is the outcome of running a tool's stored examples: the
// answer of POST /api/tools/NAME/test.
type ExampleReport struct {
	Tool    string          `json:"tool"`
	Version int             `json:"version,omitempty"`
	OK      bool            `json:"ok"`
	Results []ExampleResult `json:"results"`
	// Skipped says why no example ran, when none did.
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

// CaseResult is how a repaired version does on one failure case.
type CaseResult struct {
	ID    string          `json:"id"`
	Input json.RawMessage `json:"input"`
	// OK: the case now gives a result (Outcome "result") or a clear error
	// (Outcome "error").
	OK      bool   `json:"ok"`
	Outcome string `json:"outcome"`
	Output  string `json:"output,omitempty"`
	Error   string `json:"error,omitempty"`
	// Example: the case is a stored example from now on.
	Example bool `json:"example,omitempty"`
}

// The outcomes of a CaseResult.
const (
	OutcomeResult = "result"
	OutcomeError  = "error"
)

// RunRequest is the body of POST /api/tools/NAME/run: the tool's
// arguments, a JSON object sent as it is.
type RunRequest = json.RawMessage

// RunResult is the answer of POST /api/tools/NAME/run.
type RunResult struct {
	Tool      string  `json:"tool"`
	Version   int     `json:"version,omitempty"`
	Output    string  `json:"output"`
	Ms        float64 `json:"ms"`
	RequestID string  `json:"request_id"`
}

// RollbackRequest is the body of POST /api/tools/NAME/rollback.
type RollbackRequest struct {
	Version int `json:"version"`
}

// RollbackResult is the answer of POST /api/tools/NAME/rollback: Restored
// serves again as Version.
type RollbackResult struct {
	Tool       string          `json:"tool"`
	Version    int             `json:"version"`
	Restored   int             `json:"restored"`
	Pending    bool            `json:"pending"`
	Dependents []ExampleReport `json:"dependents"`
}

// ApproveResult is the answer of POST /api/tools/NAME/approve.
type ApproveResult struct {
	Tool    string `json:"tool"`
	Version int    `json:"version"`
	Status  string `json:"status"`
}

// ImportRequest is the body of POST /api/tools/import.
type ImportRequest struct {
	// Bundle is the .tar.gz, base64-encoded (JSON carries no bytes).
	Bundle string            `json:"bundle"`
	Rename map[string]string `json:"rename,omitempty"`
	// Replace lets the bundle's tools become the next versions of tools
	// of the same names.
	Replace bool `json:"replace,omitempty"`
}

// ImportResult is the answer of POST /api/tools/import.
type ImportResult struct {
	Imported []ImportedTool `json:"imported"`
}

// ImportedTool is one tool an import brought in.
type ImportedTool struct {
	Name string `json:"name"`
	// From is its name in the bundle, when it was renamed.
	From    string `json:"from,omitempty"`
	Version int    `json:"version"`
	// Status is ok, or pending when review is on: it waits for approval.
	Status   string `json:"status"`
	Replaced bool   `json:"replaced,omitempty"`
}

// Tool is a registry entry with, from GET /api/tools/NAME, its source
// and examples.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Category    string          `json:"category"`
	Source      string          `json:"source"`
	SHA256      string          `json:"sha256"`
	Parameters  json.RawMessage `json:"parameters"`
	Output      json.RawMessage `json:"output,omitempty"`
	TimeoutMS   int64           `json:"timeout_ms,omitempty"`
	Network     bool            `json:"network,omitempty"`
	Calls       []string        `json:"calls,omitempty"`
	Version     int             `json:"version"`
	// Origin is generated, seeded, manual or imported; Status ok, failed
	// or pending.
	Origin         string    `json:"origin"`
	Status         string    `json:"status"`
	LastError      string    `json:"last_error,omitempty"`
	PendingVersion int       `json:"pending_version,omitempty"`
	PendingSHA256  string    `json:"pending_sha256,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Warning        string    `json:"warning,omitempty"`
	Uses           []string  `json:"uses,omitempty"`
	UsedBy         []string  `json:"used_by,omitempty"`
	// Code is the source (the serving version's, or when none serves the
	// one on disk), PendingCode the source of the version that waits for
	// approval, Examples the stored examples (GET of one tool).
	Code        string          `json:"code,omitempty"`
	Serving     bool            `json:"serving"`
	PendingCode string          `json:"pending_code,omitempty"`
	Examples    json.RawMessage `json:"examples,omitempty"`
}

// VersionList is the answer of GET /api/tools/NAME/versions.
type VersionList struct {
	Tool     string    `json:"tool"`
	Versions []Version `json:"versions"`
}

// Version is one kept version of a tool.
type Version struct {
	Version int       `json:"version"`
	SHA256  string    `json:"sha256"`
	SavedAt time.Time `json:"saved_at"`
	Current bool      `json:"current"`
	Pending bool      `json:"pending,omitempty"`
	Note    string    `json:"note,omitempty"`
}

// RepairRequest is the body of POST /api/tools/NAME/repair: the failure
// cases to fix, or none for the tool's open cases.
type RepairRequest struct {
	Cases []string `json:"cases,omitempty"`
}

// FailureReport is the answer of GET /api/tools/NAME/failures: a tool's
// failure cases from use, and its repairs.
type FailureReport struct {
	Tool string `json:"tool"`
	// Version serves; PendingVersion waits for approval, if any.
	Version        int `json:"version"`
	PendingVersion int `json:"pending_version,omitempty"`
	// Open counts the cases a repair must fix; Errors the clear errors no
	// repair has judged; Accepted the refusals a repair kept; Unconfirmed
	// the thumbs-downs waiting for a person.
	Open        int             `json:"open"`
	Errors      int             `json:"errors"`
	Accepted    int             `json:"accepted"`
	Unconfirmed int             `json:"unconfirmed"`
	Cases       []FailureCase   `json:"cases"`
	Repairs     []FailureRepair `json:"repairs"`
	// Keep is how many cases the tool keeps.
	Keep int        `json:"keep"`
	Auto AutoStatus `json:"auto_repair"`
}

// FailureCase is one way a tool failed, seen Count times.
type FailureCase struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Version   int             `json:"version"`
	Args      json.RawMessage `json:"arguments"`
	ArgsBytes int             `json:"arguments_bytes"`
	Exact     bool            `json:"exact"`
	Kind      string          `json:"kind"`
	Message   string          `json:"message"`
	Comment   string          `json:"comment,omitempty"`
	Count     int             `json:"count"`
	FirstSeen time.Time       `json:"first_seen"`
	LastSeen  time.Time       `json:"last_seen"`
	RequestID string          `json:"request_id,omitempty"`
	// Status is open or unconfirmed.
	Status  string `json:"status"`
	FixedIn int    `json:"fixed_in,omitempty"`
}

// FailureRepair is one repair of a tool from its failure cases.
type FailureRepair struct {
	At        time.Time `json:"at"`
	RequestID string    `json:"request_id,omitempty"`
	Auto      bool      `json:"auto"`
	From      int       `json:"from_version"`
	Version   int       `json:"version,omitempty"`
	Pending   bool      `json:"pending,omitempty"`
	OK        bool      `json:"ok"`
	Cases     []string  `json:"cases"`
	Fixed     []string  `json:"fixed,omitempty"`
	Accepted  []string  `json:"accepted,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// AutoStatus says where a tool stands with automatic repair.
type AutoStatus struct {
	Mode        string `json:"mode"`
	After       int    `json:"after"`
	SinceChange int    `json:"since_change"`
	Every       string `json:"every"`
}

// Role is a person's role: user, builder or admin.
type Role string

// UserRequest is the body of POST /api/users and PATCH /api/users/NAME.
type UserRequest struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
}

// User is a person the server knows, without their key.
type User struct {
	// ID is fixed when the user is created; the pseudonym comes from it.
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	Pseudonym string    `json:"pseudonym"`
	Created   time.Time `json:"created"`
	Rotated   time.Time `json:"rotated,omitzero"`
}

// UserResult is the answer of a change to a user: the user, their new key
// when one was made (shown this once), and a note.
type UserResult struct {
	User    User   `json:"user"`
	Key     string `json:"key,omitempty"`
	Note    string `json:"note,omitempty"`
	Removed bool   `json:"removed,omitempty"`
}

// UserList is the answer of GET /api/users.
type UserList struct {
	Users []User `json:"users"`
	Count int    `json:"count"`
}

// ErrorBody is the answer of a refused request, and the data of a
// stream's "error" event: what went wrong in words, and its kind (not
// found, conflict, invalid, forbidden, unavailable, timeout, upstream)
// when the service named one. Some refusals carry more fields (a tool's
// schema beside invalid arguments); a client reads them from the raw
// answer.
type ErrorBody struct {
	Error     string `json:"error"`
	Kind      string `json:"error_kind,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// RetryAfter is in seconds, when trying again later may succeed.
	RetryAfter int `json:"retry_after,omitempty"`
}

// Session is one browser sign-in of a user.
type Session struct {
	ID      string    `json:"id"`
	Method  string    `json:"method"` // key or oidc
	Role    string    `json:"role,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// SessionList answers GET /api/users/NAME/sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// SessionsEnded answers DELETE /api/users/NAME/sessions[/ID].
type SessionsEnded struct {
	Ended int `json:"ended"`
}
