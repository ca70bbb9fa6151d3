package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"adaptbot/agent"
	"adaptbot/cluster"
	"adaptbot/generator"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/shipping"
	"adaptbot/toolbox"
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

// noModel is the refusal of what ("Chat", "Building tools") for want of a
// model, naming the settings that configure one.
func noModel(what string, err error) *Error {
	return &Error{Kind: NotConfigured, Err: err, Msg: what + " needs a language model, and none is configured: " + llm.ConfigureHint + "."}
}

// Errorf returns an *Error of kind k with a formatted message.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// classify turns any error of the layers below into an *Error: this is the
// one place that decides a failure's kind and the words a person sees. Our
// Go types, graph node names and a model's raw output never reach those
// words; they stay in Err, for the log. deadline is the work's bound, for
// the words of a timeout (0: unknown). An error of no known sort is of kind
// fallback: Upstream for work the model drives (its reply was unusable),
// Failed for work whose errors are already in words (a registry's refusal),
// Internal otherwise.
func classify(err error, deadline time.Duration, fallback Kind) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		c := *e // a copy: the operation stamps it with its request ID, and e may be shared (errNoFailures)
		return &c
	}
	e := &Error{Err: err}
	if r, ok := errors.AsType[*shipping.Refused](err); ok {
		// A refused import: the bundle's fault is Invalid, a name taken a
		// Conflict, a tool that fails its checks Failed.
		e.Kind, e.Msg = Failed, r.Msg
		switch r.Reason {
		case shipping.Malformed, shipping.UnsafePath, shipping.Tampered:
			e.Kind = Invalid
		case shipping.Collision:
			e.Kind = Conflict
		}
		e.Extra = map[string]any{"reason": r.Reason}
		if r.Tool != "" {
			e.Extra["tool"] = r.Tool
		}
		if r.Path != "" {
			e.Extra["path"] = r.Path
		}
		return e
	}
	if le, ok := llm.AsError(err); ok {
		e.Kind, e.Msg = Upstream, le.Error()
		switch le.Kind {
		case llm.Overloaded:
			e.Kind, e.RetryAfter = Unavailable, max(le.RetryAfter, time.Second)
		case llm.Timeout:
			e.Kind = Timeout
		}
		return e
	}
	if ae, ok := errors.AsType[*toolbox.ArgsError](err); ok {
		e.Kind, e.Msg = Invalid, ae.Reason
		e.Extra = map[string]any{"tool": ae.Tool, "parameters": ae.Schema}
		return e
	}
	if iu, ok := errors.AsType[*registry.InUseError](err); ok {
		e.Kind, e.Msg = Conflict, iu.Error()+" (?force=true, or --force)"
		e.Extra = map[string]any{"tool": iu.Tool, "dependents": iu.Dependents}
		return e
	}
	if le, ok := errors.AsType[*cluster.LockedError](err); ok {
		e.Kind, e.Msg = Conflict, le.Error()
		return e
	}
	if se, ok := errors.AsType[*sandbox.Error](err); ok {
		e.Kind, e.Msg = Failed, se.Error()
		e.Extra = map[string]any{"tool": se.Tool, "kind": se.Kind}
		if se.Kind == sandbox.KindUnavailable {
			e.Kind = Unavailable
		}
		return e
	}
	switch {
	case errors.Is(err, llm.ErrNoModel):
		e = noModel("This", err)
	case errors.Is(err, agent.ErrForbidden):
		e.Kind, e.Msg = Forbidden, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = Timeout
		e.Msg = "this did not finish within its deadline (derived from ADAPTBOT_MODEL_TIMEOUT, ADAPTBOT_MODEL_RETRIES and ADAPTBOT_TOOL_TIMEOUT); try again, or raise those settings for a slow model"
		if deadline > 0 {
			e.Msg = fmt.Sprintf("this did not finish within its deadline of %s (derived from ADAPTBOT_MODEL_TIMEOUT, ADAPTBOT_MODEL_RETRIES and ADAPTBOT_TOOL_TIMEOUT); try again, or raise those settings for a slow model", deadline.Round(time.Second))
		}
	case errors.Is(err, context.Canceled):
		e.Kind, e.Msg = Cancelled, "the request was cancelled: the client went away"
	case errors.Is(err, registry.ErrNotFound):
		e.Kind, e.Msg = NotFound, err.Error()
	case errors.Is(err, generator.ErrConflict):
		e.Kind, e.Msg = Conflict, "another build of this tool is already running; try again when it has finished"
	case errors.Is(err, cluster.ErrLocked):
		e.Kind, e.Msg = Conflict, "this tool is being changed on another replica; try again when that is done"
	case errors.Is(err, cluster.ErrDown):
		e.Kind, e.Msg = Unavailable, err.Error()
	case errors.Is(err, registry.ErrNotPending):
		e.Kind, e.Msg = Conflict, err.Error()
	case errors.Is(err, generator.ErrNoExamples):
		e.Kind, e.Msg = NotFound, err.Error()
	case errors.Is(err, errNoGenerator):
		e.Kind, e.Msg = Unavailable, err.Error()
	case fallback == Upstream:
		e.Kind, e.Msg = Upstream, "the model did not give a usable answer; try again or rephrase (the server log has the details)"
	case fallback == Failed:
		e.Kind, e.Msg = Failed, err.Error()
	default:
		e.Kind, e.Msg = Internal, "internal error; the server log has the details"
	}
	return e
}
