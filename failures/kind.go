// Package failures keeps the failure cases of tools: every failed call of a
// tool, from any door (chat, a direct run, /mcp, another tool), recorded with
// its arguments as sent (capped in size), the kind of failure, the message,
// the version, the time and the request ID; de-duplicated by tool, version
// and arguments, with a count and the last time it was seen. People read
// them on the tool's page; a repair turns them into fixes and regression
// tests.
//
// A Store holds each tool's cases in memory, bounded (Options.Keep per tool:
// the least recently seen go first), and keeps them through a Backend: a JSON
// file per tool in a folder the server owns (Files), or in a cluster a key
// per tool in a NATS KV bucket (package cluster). Writes are coalesced: a
// tool's changes reach the backend at most once per Options.FlushEvery,
// however often it fails, so a tool that fails on purpose over and over
// cannot flood the disk. Recording a case takes a lock, a hash of the capped
// arguments and a map update; nothing is written on the caller's goroutine.
//
// The package must not run tools, know about HTTP, or decide about repairs:
// the service decides, from what the store holds.
package failures

import (
	"context"
	"errors"

	"adaptbot"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// Repairable reports whether a repair may be asked to fix a case of kind
// k (adaptbot.Failure.Repairable). A feedback case waits (Unconfirmed)
// until someone confirms it on the tool's page.
func Repairable(k adaptbot.Failure) bool { return k.Repairable() }

// Known reports whether k is a kind a case keeps: the repairable ones,
// invalid_arguments and native_differs.
func Known(k adaptbot.Failure) bool {
	return Repairable(k) || k == adaptbot.FailInvalidArgs || k == adaptbot.FailNativeDiffers
}

// CaseKind is the kind of failure case a failed call makes: its word
// (adaptbot.FailureOf, the same word the call's row and trace step say)
// when the tool itself failed that way and said so through its sandbox or
// its schema; "" when the failure is not the tool's: the caller went away
// or ran out of time, the sandbox could not run it, its source does not
// compile (the registry already says so), the toolbox refused the call, or
// the error says nothing of itself (an external server's).
func CaseKind(err error) adaptbot.Failure {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	if _, said := errors.AsType[adaptbot.CallFailure](err); !said {
		return ""
	}
	switch k := adaptbot.FailureOf(err); k {
	case adaptbot.FailError, adaptbot.FailPanic, adaptbot.FailCrash, adaptbot.FailTimeout,
		adaptbot.FailMemory, adaptbot.FailBadOutput, adaptbot.FailInvalidArgs:
		return k
	}
	return ""
}

// Message is what a case says of a failed call: the sandbox's or the
// schema's words, without the "tool NAME: KIND:" every door puts before
// them (the case has its tool and kind).
func Message(err error) string {
	if se, ok := errors.AsType[*sandbox.Error](err); ok {
		return se.Msg
	}
	if ae, ok := errors.AsType[*toolbox.ArgsError](err); ok {
		return ae.Reason
	}
	return err.Error()
}
