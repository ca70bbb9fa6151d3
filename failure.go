package adaptbot

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
