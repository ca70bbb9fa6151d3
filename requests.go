package adaptbot

import (
	"context"
	"encoding/json"
	"time"
)

// The contract of stored requests: each request's trace, kept after its
// answer is gone (GET /api/requests/ID), and the refusals the edge makes
// before an operation begins, which are requests too.

// Trace is one stored request: what it asked, what it answered, and who
// asked (package traces keeps them).
type Trace struct {
	ID    string    `json:"request_id"`
	Kind  string    `json:"kind"`
	Time  time.Time `json:"time"`
	Query string    `json:"query,omitempty"`
	// Tool is the tool that ran or was built, if any.
	Tool string `json:"tool,omitempty"`
	// Error is why the request failed, if it did.
	Error string `json:"error,omitempty"`
	// Result is what the request answered: for a chat, the chat result JSON
	// (trace, total_ms, llm_calls, usage, ...).
	Result json.RawMessage `json:"result,omitempty"`
	// Door is where the request came in (http, mcp, cli, internal).
	Door string `json:"door,omitempty"`
	// User is the pseudonym of the request's author, who alone (with
	// admins) may read it; empty for the single local user.
	User string `json:"user,omitempty"`
	// Rating is what the author said of the answer, once they did: the
	// record is stored again with it.
	Rating *Rating `json:"feedback,omitempty"`
}

// Rating is a person's thumbs up (1) or down (-1) on an answer, with an
// optional comment.
type Rating struct {
	Score   int       `json:"score"`
	Comment string    `json:"comment,omitempty"`
	Time    time.Time `json:"time"`
	// RequestID is the feedback's own request (its benchmark row).
	RequestID string `json:"request_id"`
}

// RequestList is the answer of GET /api/requests: the newest stored
// requests the caller may read, newest first, without their results.
type RequestList struct {
	Requests []Trace `json:"requests"`
}

// RequestService reads stored requests: a request belongs to its author,
// and for anyone else (but whoever may read everything) it does not exist.
type RequestService interface {
	// Requests lists the newest stored requests the caller may read.
	Requests(ctx context.Context, limit int) (*RequestList, error)
	// Request returns one stored request.
	Request(ctx context.Context, id string) (*Trace, error)
}

// Refused is a request turned away before its operation began: by the
// edge (a body too large, a client over its rate or its share, the server
// busy, a message that is empty, a bundle that is not one, a role the
// route needs) or by a door's protocol (a tool that does not exist, over
// /mcp). The operation it asked for names its row.
type Refused struct {
	// Intent is the operation's: IntentChat, IntentBuild, IntentRun or
	// IntentFeedback.
	Intent string
	// Category is what is known of it before decoding: a run's tool, a
	// build_ category; "" when the body would have said.
	Category string
	// Tool is the tool it was about, if any.
	Tool string
	// Query is what the caller asked, when it was read.
	Query string
	// Err is the refusal the caller gets; its kind (KindOf) and words are
	// the row's.
	Err error
}

// Refuser writes the row of a request refused before its operation began.
type Refuser interface {
	// Refuse writes the one row and trace of r, attributed to the caller
	// and door ctx names, and returns the refusal as an *Error carrying
	// the request ID.
	Refuse(ctx context.Context, r Refused) *Error
}
