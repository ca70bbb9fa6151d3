package adaptbot

import (
	"context"
	"errors"
)

// Failure says how a tool call failed. It is the one vocabulary of a failed
// call: the sandbox reports it, the toolbox adds the failures that are not
// the sandbox's (a call refused, a tool not found), and the call's row,
// trace step, metric, failure case and API answer all say the same word. A
// crash is "crash" everywhere.
type Failure string

// The ways a call can fail.
const (
	FailError       Failure = "error"             // Execute returned an error (an external tool: its server said so)
	FailPanic       Failure = "panic"             // Execute panicked
	FailCrash       Failure = "crash"             // the worker died under it (a fatal runtime error, a stack overflow)
	FailTimeout     Failure = "timeout"           // it ran past its time limit (or what its caller had left)
	FailMemory      Failure = "memory"            // it ran past the worker's memory or goroutine limit
	FailBadOutput   Failure = "bad_output"        // its result is over the output limit, cannot be encoded, or breaks its output schema
	FailInvalidArgs Failure = "invalid_arguments" // the arguments are not valid JSON, break the schema or do not decode into Input
	FailCompile     Failure = "compile"           // the source does not load, or imports what it may not
	FailUnavailable Failure = "unavailable"       // no sandbox worker or server could take it
	FailNotFound    Failure = "not_found"         // no tool of that name serves
	FailRefused     Failure = "refused"           // a cycle, or a chain of calls past the depth limit
	FailCancelled   Failure = "cancelled"         // its caller gave up

	// Two a failure case keeps besides those of a call (package failures).

	// FailFeedback: the call ran, and a person said the answer was wrong.
	FailFeedback Failure = "feedback"
	// FailNativeDiffers: the tool's native build gave another result than
	// the interpreter on this call, so it stays interpreted.
	FailNativeDiffers Failure = "native_differs"
)

// CallFailure is an error that says how a call failed: the sandbox's
// errors, and the toolbox's refusals of a call (its arguments, its chain,
// a tool that does not exist), are.
type CallFailure interface {
	error
	Failure() Failure
}

// FailureOf returns how a call failed, "" for nil: the word the error says
// of itself (a CallFailure's), FailCancelled or FailTimeout for a call
// whose caller went away or ran out of time, and FailError for any other
// error (an external tool's: its server said no). It is the one reading of
// a failed call, for its row, its trace step, its span, its metric and its
// failure case alike.
func FailureOf(err error) Failure {
	if err == nil {
		return ""
	}
	if f, ok := errors.AsType[CallFailure](err); ok {
		return f.Failure()
	}
	switch {
	case errors.Is(err, context.Canceled):
		return FailCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return FailTimeout
	}
	return FailError
}

// Repairable reports whether a repair may be asked to fix a failure of
// kind f: the tool's own doing (an error it returned, a panic, a crash, a
// limit it ran into, an output it could not give) or a person's word that
// its answer was wrong. An invalid_arguments failure is the caller's; a
// native_differs one the native build's, not the source's.
func (f Failure) Repairable() bool {
	switch f {
	case FailError, FailPanic, FailCrash, FailTimeout, FailMemory, FailBadOutput, FailFeedback:
		return true
	}
	return false
}
