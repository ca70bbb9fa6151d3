package adaptbot

import (
	"errors"
	"fmt"
	"time"
)

// Kind says what sort of failure an error is. The edge turns a Kind into a
// status with one switch, for JSON answers and event streams alike; the
// CSV's error_kind column records it.
type Kind string

// The kinds of failure.
const (
	// Invalid: the request itself is wrong (a bad name, bad arguments, an
	// impossible version). 400.
	Invalid Kind = "invalid"
	// Unauthenticated: nobody is signed in, or the key is unknown. 401.
	Unauthenticated Kind = "unauthenticated"
	// Forbidden: the caller may not do this. 403.
	Forbidden Kind = "forbidden"
	// NotFound: no such tool, version or request. 404.
	NotFound Kind = "not_found"
	// Conflict: the state does not allow it now (a build of the same tool
	// is running, a tool others use, nothing pending). 409.
	Conflict Kind = "conflict"
	// Gone: what the request names existed and is over for good (an
	// approval that expired). 410.
	Gone Kind = "gone"
	// Failed: the work ran and failed (a tool's error, a build that did not
	// pass its gate). 422.
	Failed Kind = "failed"
	// Unavailable: a part the request needs is away (the cluster, the
	// sandbox), or the server is busy. 503.
	Unavailable Kind = "unavailable"
	// Limited: the caller is over a limit of its own, its rate or its
	// share of the server's slots, while others are not; it may try again
	// (RetryAfter). 429.
	Limited Kind = "limited"
	// NotConfigured: the request needs something the server was not set up
	// with, usually a model; the message names the setting. 503, and its
	// own outcome in the benchmarks: not a failure of the product.
	NotConfigured Kind = "not_configured"
	// Timeout: the work did not finish within its deadline. 504.
	Timeout Kind = "timeout"
	// Upstream: a model or an external server failed or answered with
	// something unusable. 502.
	Upstream Kind = "upstream"
	// Cancelled: the client went away. Nobody is left to see a status.
	Cancelled Kind = "cancelled"
	// Internal: a fault of ours; the details go to the log only. 500.
	Internal Kind = "internal"
)

// Error is a failure with its kind and words a person can act on. Every
// error an operation returns is one.
type Error struct {
	Kind Kind
	// Msg is what the caller sees.
	Msg string
	// RequestID names the request, for the logs and the trace.
	RequestID string
	// RetryAfter, when set, says when trying again makes sense.
	RetryAfter time.Duration
	// Extra holds fields merged into a JSON answer ("parameters": the
	// schema for bad arguments, "dependents": the tools that use a tool).
	Extra map[string]any
	// Err is the cause, for the log; never shown.
	Err error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns err's kind: an *Error's, or Internal for anything else
// (nil has no kind).
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return Internal
}

// Errorf returns an *Error of kind k with a formatted message.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}
