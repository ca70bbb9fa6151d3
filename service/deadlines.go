package service

import (
	"time"

	"adaptbot/approval"
	"adaptbot/llm"
	"adaptbot/sandbox"
)

// Deadlines bound each kind of work end to end. Every model call is bounded
// by its provider already, so these only stop work that is clearly stuck:
// they let every call take its whole timeout, one call use all its retries,
// and the tools (or a build's examples) run for their limit.
type Deadlines struct {
	Chat  time.Duration
	Build time.Duration
	// Test bounds re-running a tool's stored examples.
	Test time.Duration
}

// Defaults when a part cannot say (no model configured, tests): the
// owners' own.
const (
	defaultModelTry  = llm.DefaultTimeout
	defaultToolLimit = sandbox.DefaultCallTimeout
	defaultTest      = 2 * time.Minute
)

func (d Deadlines) orDefaults() Deadlines {
	if d.Chat <= 0 {
		d.Chat = 10 * time.Minute
	}
	if d.Build <= 0 {
		d.Build = 10 * time.Minute
	}
	if d.Test <= 0 {
		d.Test = defaultTest
	}
	return d
}

// deadlines asks each part how much work it may take, and derives the
// bounds: the agent (model calls and rounds of tool calls per message), the
// generator (model calls and example runs per build), the model (one try,
// one call with retries), the sandbox (d.ToolTimeout, one tool call) and
// the approvals (d.ApprovalTimeout, one wait for a person per round). A
// bound it cannot derive is left zero, for orDefaults.
func deadlines(d Deps) Deadlines {
	try, call := defaultModelTry, defaultModelTry
	if d.Agent != nil {
		if b, ok := d.Agent.Model().(llm.Budgeted); ok {
			if t, c := b.CallBudget(); t > 0 {
				try, call = t, c
			}
		}
	}
	toolLimit := d.ToolTimeout
	if toolLimit <= 0 {
		toolLimit = defaultToolLimit
	}
	retries := call - try // one call may use all its retries
	var build time.Duration
	if d.Generator != nil {
		calls, runs := d.Generator.Budget()
		build = time.Duration(calls)*try + time.Duration(runs)*toolLimit + retries
	}
	out := Deadlines{Build: build}
	if d.Agent != nil {
		calls, rounds := d.Agent.Budget()
		// Each round's tools may wait for a person's approval (their own
		// clocks stop meanwhile; the chat's is only a backstop).
		wait := d.ApprovalTimeout
		if wait <= 0 {
			wait = approval.DefaultTimeout
		}
		chat := time.Duration(calls)*try + time.Duration(rounds)*(toolLimit+wait) + retries
		// A chat may also decide on a build and run it.
		out.Chat = max(chat, try+build)
	}
	return out
}
