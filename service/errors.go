package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/cluster"
	"adaptbot/llm"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// noModel is the refusal of what ("Chat", "Building tools") for want of a
// model, naming the settings that configure one.
func noModel(what string, err error) *adaptbot.Error {
	return &adaptbot.Error{Kind: adaptbot.NotConfigured, Err: err, Msg: what + " needs a language model, and none is configured: " + llm.ConfigureHint + "."}
}

// classify turns any error of the layers below into an *Error: this is the
// one place that decides the kind and the words of a failure that did not
// say them itself. The layers that can return an *adaptbot.Error at the
// source (a refused import, a build already running, the service's own
// refusals); what is left here cannot, or not yet: the sandbox's errors (a
// native worker's copy of package sandbox knows of the root only its
// failures), the model's (package llm speaks for every provider), the
// toolbox's refusal of arguments and the registry's of a tool in use (their
// words are also a trace's and a model's, which the door's hint would
// change), the cluster's, the context's ends, and the sentinels the
// registry and the agent wrap with words of their own. Our
// Go types, graph node names and a model's raw output never reach those
// words; they stay in Err, for the log. deadline is the work's bound, for
// the words of a timeout (0: unknown). An error of no known sort is of kind
// fallback: Upstream for work the model drives (its reply was unusable),
// Failed for work whose errors are already in words (a registry's refusal),
// Internal otherwise.
func classify(err error, deadline time.Duration, fallback adaptbot.Kind) *adaptbot.Error {
	if e, ok := errors.AsType[*adaptbot.Error](err); ok {
		c := *e // a copy: the operation stamps it with its request ID, and e may be shared (errNoFailures)
		return &c
	}
	e := &adaptbot.Error{Err: err}
	if le, ok := llm.AsError(err); ok {
		e.Kind, e.Msg = adaptbot.Upstream, le.Error()
		switch le.Kind {
		case llm.Overloaded:
			e.Kind, e.RetryAfter = adaptbot.Unavailable, max(le.RetryAfter, time.Second)
		case llm.Timeout:
			e.Kind = adaptbot.Timeout
		}
		return e
	}
	if ae, ok := errors.AsType[*toolbox.ArgsError](err); ok {
		e.Kind, e.Msg = adaptbot.Invalid, ae.Reason
		e.Extra = map[string]any{"tool": ae.Tool, "parameters": ae.Schema}
		return e
	}
	if iu, ok := errors.AsType[*registry.InUseError](err); ok {
		e.Kind, e.Msg = adaptbot.Conflict, iu.Error()+" (?force=true, or --force)"
		e.Extra = map[string]any{"tool": iu.Tool, "dependents": iu.Dependents}
		return e
	}
	if le, ok := errors.AsType[*cluster.LockedError](err); ok {
		e.Kind, e.Msg = adaptbot.Conflict, le.Error()
		return e
	}
	if se, ok := errors.AsType[*sandbox.Error](err); ok {
		e.Kind, e.Msg = adaptbot.Failed, se.Error()
		e.Extra = map[string]any{"tool": se.Tool, "kind": se.Kind}
		if se.Kind == adaptbot.FailUnavailable {
			e.Kind, e.RetryAfter = adaptbot.Unavailable, cluster.RetryAfter
		}
		return e
	}
	switch {
	case errors.Is(err, llm.ErrNoModel):
		e = noModel("This", err)
	case errors.Is(err, agent.ErrForbidden):
		e.Kind, e.Msg = adaptbot.Forbidden, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = adaptbot.Timeout
		e.Msg = "this did not finish within its deadline (derived from ADAPTBOT_MODEL_TIMEOUT, ADAPTBOT_MODEL_RETRIES and ADAPTBOT_TOOL_TIMEOUT); try again, or raise those settings for a slow model"
		if deadline > 0 {
			e.Msg = fmt.Sprintf("this did not finish within its deadline of %s (derived from ADAPTBOT_MODEL_TIMEOUT, ADAPTBOT_MODEL_RETRIES and ADAPTBOT_TOOL_TIMEOUT); try again, or raise those settings for a slow model", deadline.Round(time.Second))
		}
	case errors.Is(err, context.Canceled):
		e.Kind, e.Msg = adaptbot.Cancelled, "the request was cancelled: the client went away"
	case errors.Is(err, registry.ErrNotFound):
		e.Kind, e.Msg = adaptbot.NotFound, err.Error()
	case errors.Is(err, cluster.ErrLocked):
		e.Kind, e.Msg = adaptbot.Conflict, "this tool is being changed on another replica; try again when that is done"
	case errors.Is(err, cluster.ErrDown):
		e.Kind, e.Msg, e.RetryAfter = adaptbot.Unavailable, err.Error(), cluster.RetryAfter
	case errors.Is(err, registry.ErrNotPending):
		e.Kind, e.Msg = adaptbot.Conflict, err.Error()
	case fallback == adaptbot.Upstream:
		e.Kind, e.Msg = adaptbot.Upstream, "the model did not give a usable answer; try again or rephrase (the server log has the details)"
	case fallback == adaptbot.Failed:
		e.Kind, e.Msg = adaptbot.Failed, err.Error()
	default:
		e.Kind, e.Msg = adaptbot.Internal, "internal error; the server log has the details"
	}
	return e
}
