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

	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// Kind says how a call failed, in the words the pages and the API use: a
// call's failure kind (toolbox.ErrorKind, the one vocabulary of the row, the
// trace and the case) for the kinds a case keeps, and two of the case's own
// (Feedback, NativeDiffers).
type Kind string

// The kinds of failure.
const (
	// Error: Execute returned an error.
	Error Kind = "error"
	// Panic: Execute panicked.
	Panic Kind = "panic"
	// Crash: the worker died under the call (a fatal runtime error, a
	// stack overflow). Cases kept before this kind existed say panic.
	Crash Kind = "crash"
	// Timeout: the call ran past its time limit.
	Timeout Kind = "timeout"
	// Memory: the call ran past the worker's memory limit.
	Memory Kind = "memory"
	// BadOutput: the result could not be returned (larger than the cap).
	BadOutput Kind = "bad_output"
	// InvalidArguments: the arguments broke the tool's schema or did not
	// decode into its Input. Kept for people to see; a repair cannot fix
	// the caller's arguments, so these never start one.
	InvalidArguments Kind = "invalid_arguments"
	// Feedback: the call ran, and a person said the answer was wrong. It
	// waits (Unconfirmed) until someone confirms it on the tool's page.
	Feedback Kind = "feedback"
	// NativeDiffers: the tool's native build gave another result than the
	// interpreter on this call (package native), so it stays interpreted.
	// A repair cannot be asked to fix it; people read it on the tool's page.
	NativeDiffers Kind = "native_differs"
)

// Repairable reports whether a repair may be asked to fix a case of kind k.
func (k Kind) Repairable() bool {
	switch k {
	case Error, Panic, Crash, Timeout, Memory, BadOutput, Feedback:
		return true
	}
	return false
}

// Known reports whether k is one of the kinds above.
func (k Kind) Known() bool { return k.Repairable() || k == InvalidArguments || k == NativeDiffers }

// KindOf returns the kind of a failed call's error (toolbox.KindOf's, the
// same word the call's row and trace step say), or "" when the failure is
// not the tool's: the caller went away or ran out of time, the sandbox
// could not run it, its source does not compile (the registry already says
// so), or it is no sandbox's at all (an external server's error).
func KindOf(err error) Kind {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	if _, ok := errors.AsType[*toolbox.ArgsError](err); !ok && sandbox.KindOf(err) == "" {
		return ""
	}
	switch k := toolbox.KindOf(err); k {
	case toolbox.KindError, toolbox.KindPanic, toolbox.KindCrash, toolbox.KindTimeout,
		toolbox.KindMemory, toolbox.KindBadOutput, toolbox.KindInvalidArgs:
		return Kind(k)
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
