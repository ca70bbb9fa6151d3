//go:build adaptbot_native

package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"adaptbot"
	"adaptbot/clip"
)

// This file is compiled only into a native worker program (package native
// builds one, with the build tag adaptbot_native): there the interpreter is
// absent and a tool is its compiled package. Everything else a worker does,
// its protocol, limits, Landlock and seccomp, is the same source as the
// interpreted worker's.

// NativeTool is one tool version compiled into a native worker program.
type NativeTool struct {
	// Name is the tool's name, Hash the digest of the checked source it was
	// built from (Digest): the worker serves that version and no other.
	Name, Hash string
	// Invoke decodes the call's arguments with decode into the tool's Input
	// and calls its Execute.
	Invoke func(ctx context.Context, decode func(any) error) (any, error)
}

// nativeTools are the tools this program serves, by Hash.
var nativeTools = map[string]NativeTool{}

func init() {
	toolFrames = []byte(NativeToolPath)
	retireAfterFailure = true
	// Every tool package imports this one (the builder adds the import), so
	// this runs before any tool's package initialiser: confine first, and
	// set the memory limits, so that no tool code runs unconfined or
	// unbounded. In the first image, confineOnce does not return: it starts
	// the program over, confined.
	confineOnce()
	if limit, err := strconv.ParseInt(os.Getenv("GOMEMLIMIT"), 10, 64); err == nil && limit > 0 {
		setWorkerRuntime(limit)
		if err := setLimits(limit); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox worker: %v\n", err)
		}
	}
}

// ServeNative serves tools as a worker, as ServeWorker does, with their
// compiled code in place of the interpreter.
func ServeNative(tools ...NativeTool) error {
	for _, t := range tools {
		nativeTools[t.Hash] = t
	}
	return ServeWorker()
}

// program is one native tool.
type program struct{ tool NativeTool }

// load finds the compiled tool for src, which must be the very source it
// was built from.
func load(_ context.Context, tool string, src []byte, _ time.Duration, _ any) (*program, error) {
	t, ok := nativeTools[sourceHash(tool, src)]
	if !ok || t.Name != tool {
		return nil, &Error{Tool: tool, Kind: adaptbot.FailCompile, Msg: "this native worker was not built from this version of the tool"}
	}
	return &program{tool: t}, nil
}

// execute runs the tool once with input, as the interpreter's execute does:
// under ctx plus grace, after which it reports that the worker must end
// (compiled code cannot be stopped from outside).
func (p *program) execute(ctx context.Context, input []byte, maxOutput int, grace, limit time.Duration) (outcome, bool) {
	start := time.Now()
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{Kind: adaptbot.FailPanic, Msg: clip.String(panicString(r), 4096)}
			}
		}()
		var inputErr error
		out, err := p.tool.Invoke(ctx, func(v any) error {
			inputErr = decodeInput(input, v)
			return inputErr
		})
		switch {
		case inputErr != nil:
			done <- outcome{Kind: adaptbot.FailInvalidArgs, Msg: "arguments do not match Input: " + clip.String(inputErr.Error(), 4096)}
		case err != nil:
			msg := clip.String(err.Error(), maxOutput)
			if ctx.Err() != nil {
				done <- outcome{Kind: adaptbot.FailTimeout, Msg: msg}
				return
			}
			done <- outcome{Kind: adaptbot.FailError, Msg: msg}
		default:
			done <- encodeOutput(out, maxOutput)
		}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case o = <-done:
		case <-t.C:
			return outcome{Kind: adaptbot.FailTimeout, Msg: timeoutMsg(ctx, limit), Duration: time.Since(start)}, false
		}
	}
	if o.Kind == adaptbot.FailTimeout {
		o.Msg = timeoutMsg(ctx, limit)
	}
	o.Duration = time.Since(start)
	return o, true
}
