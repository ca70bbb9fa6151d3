// Package sandbox runs tools — Go source interpreted by Yaegi — so that
// model-written code can neither reach past its allowlist nor take the server
// down. The symbols given to the interpreter are the sandbox: the allowlisted
// standard packages of package contract and the toolkit's exported calls,
// nothing else. Runner has two implementations behind one interface: worker
// processes (Pool, the default, which survive out-of-memory, stack overflow
// and fatal runtime errors in a tool, and kill and replace a worker that hits
// a limit) and in-process (InProcess, for development and tests). Behind the
// symbol table, workers confine themselves with Landlock where the kernel has
// it (Options.Landlock), so that a tool that reached past its symbols could
// still open no file but the few Go reads at run time, and with a seccomp
// filter that refuses the system calls an escape would use next. README.md lists what a
// tool can and cannot do, and the limits.
//
// The package must never hand an interpreter a symbol the contract's
// allowlist does not name, nor let a tool see or change how the host
// configures it (the egress policy, the limits); the server's binary must
// call ServeWorker when started as a worker.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"adaptbot"
)

// Call is one tool invocation.
type Call struct {
	// Tool is the tool's name, which is also its package name.
	Tool string
	// Source is the tool's Go source; interpreters are cached by its hash.
	Source []byte
	// Input is the JSON object of arguments, decoded into the tool's Input.
	Input json.RawMessage
	// Timeout caps the call; zero means the runner's default.
	Timeout time.Duration
	// Nested says another tool's call made this one (toolkit.Call) and waits
	// for it. Its limit is cut to what is left of ctx's deadline (the
	// caller's), and in a Pool it may run on a worker beyond the pool's size
	// when every worker is busy: its caller holds a worker while it waits,
	// so a full pool of callers would otherwise wait for their callees
	// forever.
	Nested bool
}

// Result is what a successful call returned.
type Result struct {
	// Output is the tool's result: the string it returned as is, or any other
	// value encoded as JSON.
	Output string `json:"output"`
	// Duration is the time the call took inside the runner.
	Duration time.Duration `json:"-"`
	// Tier is the tier that ran the call, TierInterpreted or TierNative, as
	// a runner with two tiers (package native) says, on success and
	// failure alike; empty from a runner that has only the interpreter.
	Tier string `json:"-"`
}

// The tiers a call runs on (Result.Tier).
const (
	TierInterpreted = "interpreted"
	TierNative      = "native"
)

// Runner runs tools.
type Runner interface {
	// Compile loads the tool in the sandbox without calling it: it fails on a
	// compile error or a refused import, with the interpreter's message.
	Compile(ctx context.Context, tool string, source []byte) error
	// Run calls the tool's Execute with the call's input.
	Run(ctx context.Context, c Call) (Result, error)
	// Close stops the runner and its workers.
	Close() error
	// Stats describes the runner now, for health checks and tests.
	Stats() Stats
}

// Stats describes a Runner. For ModeWorkers a healthy pool has
// Live+Starting == Size; Restarts counts workers replaced after a timeout,
// crash, limit or leaked goroutine, or, confined, after a file their
// Landlock rules hold changed.
type Stats struct {
	Mode          Mode  `json:"mode"`
	Size          int   `json:"size"`           // configured workers (0 in-process)
	Live          int   `json:"live"`           // worker processes running
	Busy          int   `json:"busy"`           // of which serving a call
	Idle          int   `json:"idle"`           // of which free
	Starting      int   `json:"starting"`       // replacements being started
	Restarts      int64 `json:"restarts"`       // workers replaced so far
	StartFailures int64 `json:"start_failures"` // worker starts that failed
	PIDs          []int `json:"-"`              // the live workers' process IDs, extra ones included
	// Extra counts the workers started beyond Size for nested calls
	// (Call.Nested) while every worker was busy: running one, or idle for a
	// while in case another comes. They are not counted in Live, Busy or
	// Idle, and are not replaced when they end.
	Extra int `json:"extra"`
	// Confined says every live worker runs under Landlock (Options.Landlock),
	// and Seccomp that every one has its seccomp filter; Confinement says
	// with which Landlock ABI version and whether with the filter ("Landlock
	// ABI 7, seccomp"), or what is missing and why, for the least confined.
	Confined    bool   `json:"confined"`
	Seccomp     bool   `json:"seccomp"`
	Confinement string `json:"confinement"`
}

// Error is a failed call, naming the tool and the limit or fault it hit.
type Error struct {
	Tool string
	Kind adaptbot.Failure
	Msg  string
	// unsent: the call never reached a worker (Unsent).
	unsent bool
}

// Unsent reports whether err says a call never reached a worker, so that
// trying it again elsewhere cannot run it twice: a tool's requests, once
// sent, must never be sent again.
func Unsent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.unsent
}

func (e *Error) Error() string {
	return fmt.Sprintf("tool %s: %s: %s", e.Tool, e.Kind, e.Msg)
}

// Failure is how the call failed (adaptbot.FailureOf reads it): the
// sandbox reports FailCompile, FailInvalidArgs, FailError, FailPanic,
// FailTimeout, FailMemory, FailBadOutput, FailCrash and FailUnavailable.
func (e *Error) Failure() adaptbot.Failure { return e.Kind }
