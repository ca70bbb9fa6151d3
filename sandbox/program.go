package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/traefik/yaegi/interp"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/contract"
)

// The host package is how the invoke wrapper reaches the call's context and
// input and hands back the result. Tools cannot import it: its path is not
// on the contract's allowlist, which is checked before interpreting.
const (
	hostPath  = "adaptbot/sandbox/host"
	hostKey   = hostPath + "/host"
	hostAlias = "adaptbotHost"
)

// program is one tool version loaded in its own interpreter. It serves one
// call at a time.
type program struct {
	in     *interp.Interpreter
	invoke *interp.Program // a call of the wrapper, adaptbotInvoke()
	slot   *slot
}

// slot carries one call in and out of the interpreter.
type slot struct {
	ctx      context.Context
	input    []byte
	inputErr error  // the input did not decode into Input
	returned bool   // Execute returned
	out      any    // what Execute returned...
	failed   bool   // ...or that it failed,
	errMsg   string // with this error
}

func (s *slot) decode(v any) error {
	s.inputErr = decodeInput(s.input, v)
	return s.inputErr
}

// checkInput refuses arguments that are not one JSON value (or nothing),
// before they are sent anywhere.
func checkInput(tool string, input []byte) error {
	if len(bytes.TrimSpace(input)) == 0 {
		return nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(input, &v); err != nil {
		return &Error{Tool: tool, Kind: adaptbot.FailInvalidArgs, Msg: "arguments are " + clip.String(inputProblem(err).Error(), 4096)}
	}
	return nil
}

// emptyFS is the interpreter's source file system: tools are single files
// handed over as text, so the interpreter never needs to read a file.
type emptyFS struct{}

func (emptyFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// checkSource runs the contract's static checks (the import allowlist among
// them) before any interpreting, and returns the tool's declared timeout.
func checkSource(tool string, src []byte) (specEntry, error) {
	spec, err := contract.Parse(tool, src)
	if err != nil {
		var ce *contract.Error
		if errors.As(err, &ce) {
			return specEntry{}, &Error{Tool: tool, Kind: adaptbot.FailCompile, Msg: "breaks the tool contract:\n- " + strings.Join(ce.Problems, "\n- ")}
		}
		return specEntry{}, &Error{Tool: tool, Kind: adaptbot.FailCompile, Msg: err.Error()}
	}
	return specEntry{timeout: spec.Timeout, hosts: spec.Hosts}, nil
}

// load compiles src as tool in a fresh interpreter whose only symbols are
// the sandbox's. Package-level initialisers and init functions run here,
// bounded by ctx. What the tool prints goes to stdout.
func load(ctx context.Context, tool string, src []byte, limit time.Duration, stdout io.Writer) (*program, error) {
	// The callers checked already; this load must not depend on it.
	if _, err := checkSource(tool, src); err != nil {
		return nil, err
	}
	src, err := rewriteSemantics(src)
	if err != nil {
		return nil, &Error{Tool: tool, Kind: adaptbot.FailCompile, Msg: err.Error()}
	}
	s := &slot{}
	in := interp.New(interp.Options{
		Stdin:                strings.NewReader(""),
		Stdout:               stdout,
		Stderr:               stdout,
		Args:                 []string{tool},
		Env:                  []string{},
		SourcecodeFilesystem: emptyFS{},
	})
	if err := in.Use(symbolsFor()); err != nil {
		return nil, fmt.Errorf("sandbox: load symbols: %w", err)
	}
	if err := in.Use(interp.Exports{hostKey: {
		"Context": reflect.ValueOf(func() context.Context { return s.ctx }),
		"Decode":  reflect.ValueOf(s.decode),
		"Return":  reflect.ValueOf(func(v any) { s.out, s.returned = v, true }),
		"Fail":    reflect.ValueOf(func(msg string) { s.errMsg, s.failed, s.returned = msg, true, true }),
		// The builtin clear, for the rewrite of semantics.go.
		"Clear": reflect.ValueOf(clearValue),
	}}); err != nil {
		return nil, fmt.Errorf("sandbox: load host symbols: %w", err)
	}
	// Initialisers run here, so the load is bounded like a call.
	done := make(chan error, 1)
	go func() { done <- run(func() error { _, err := in.Eval(string(src)); return err }) }()
	select {
	case err := <-done:
		if err != nil {
			return nil, loadError(ctx, tool, limit, err)
		}
	case <-ctx.Done():
		stopRuns(in)
		return nil, loadError(ctx, tool, limit, ctx.Err())
	}
	// The wrapper lives in the interpreter's main package, beside the tool's
	// package, and its call is compiled once: a call of the tool is then the
	// run of a compiled program, cancellable like any Yaegi run. An error's
	// message is taken inside, as Error may be interpreted code too.
	wrapper := fmt.Sprintf(`import %[2]s %[3]q

func adaptbotInvoke() {
	var in %[1]s.Input
	if %[2]s.Decode(&in) != nil {
		return
	}
	out, err := %[1]s.Execute(%[2]s.Context(), in)
	if err != nil {
		%[2]s.Fail(err.Error())
		return
	}
	%[2]s.Return(out)
}`, tool, hostAlias, hostPath)
	if _, err := in.Eval(wrapper); err != nil {
		return nil, loadError(ctx, tool, limit, err)
	}
	invoke, err := in.Compile("adaptbotInvoke()")
	if err != nil {
		return nil, loadError(ctx, tool, limit, err)
	}
	return &program{in: in, invoke: invoke, slot: s}, nil
}

// position matches a line:column at the start of a line of an error.
var position = regexp.MustCompile(`(?m)^(\d+:\d+: )`)

func loadError(ctx context.Context, tool string, limit time.Duration, err error) error {
	if ctx.Err() != nil {
		if timeoutMsg(ctx, limit) == cancelledMsg {
			return &Error{Tool: tool, Kind: adaptbot.FailTimeout, Msg: cancelledMsg + " while the tool was loading"}
		}
		return &Error{Tool: tool, Kind: adaptbot.FailTimeout, Msg: fmt.Sprintf("loading the tool (its package initialisers) ran past its %v time limit", limit)}
	}
	var p interp.Panic
	if errors.As(err, &p) {
		return &Error{Tool: tool, Kind: adaptbot.FailPanic, Msg: "panic while loading: " + clip.String(panicString(p.Value), 4096)}
	}
	// Yaegi gives positions without a file name: name the tool's file.
	msg := strings.ReplaceAll(err.Error(), interp.DefaultSourceName+":", "")
	msg = position.ReplaceAllString(msg, tool+".go:$1")
	return &Error{Tool: tool, Kind: adaptbot.FailCompile, Msg: msg}
}

// execute runs Execute once with input, under ctx plus grace for a tool
// that notices cancellation late, and encodes what it returned. Past that,
// it stops the interpreter (Yaegi ends interpreted loops between statements;
// code blocked in a host call, such as a sleep, lingers) and reports that p
// must not be used again.
func (p *program) execute(ctx context.Context, input []byte, maxOutput int, grace, limit time.Duration) (outcome, bool) {
	start := time.Now()
	s := p.slot
	*s = slot{ctx: ctx, input: input}
	done := make(chan error, 1)
	go func() { done <- run(func() error { _, err := p.in.Execute(p.invoke); return err }) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			stopRuns(p.in)
			// The slot is left alone: the stopped code may still write it.
			return outcome{Kind: adaptbot.FailTimeout, Msg: timeoutMsg(ctx, limit), Duration: time.Since(start)}, false
		}
	}
	o := p.result(ctx, err, maxOutput)
	if o.Kind == adaptbot.FailTimeout {
		o.Msg = timeoutMsg(ctx, limit)
	}
	*s = slot{}
	o.Duration = time.Since(start)
	return o, true
}

// result reads the outcome of a finished run from the slot.
func (p *program) result(ctx context.Context, err error, maxOutput int) outcome {
	s := p.slot
	var pe interp.Panic
	switch {
	case errors.As(err, &pe):
		return outcome{Kind: adaptbot.FailPanic, Msg: clip.String(panicString(pe.Value), 4096)}
	case err != nil:
		return outcome{Kind: adaptbot.FailCrash, Msg: "interpreter: " + clip.String(err.Error(), 4096)}
	case s.inputErr != nil:
		return outcome{Kind: adaptbot.FailInvalidArgs, Msg: "arguments do not match Input: " + clip.String(s.inputErr.Error(), 4096)}
	case !s.returned:
		return outcome{Kind: adaptbot.FailCrash, Msg: "Execute did not return"}
	case s.failed:
		msg := clip.String(s.errMsg, maxOutput)
		if ctx.Err() != nil {
			return outcome{Kind: adaptbot.FailTimeout, Msg: msg}
		}
		return outcome{Kind: adaptbot.FailError, Msg: msg}
	}
	return encodeOutput(s.out, maxOutput)
}

// run calls f, turning a panic into an interp.Panic error: Yaegi recovers
// panics of interpreted code, but not its own.
func run(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = interp.Panic{Value: r}
		}
	}()
	return f()
}

// stopRuns stops the code in interpreted in runs now, as a cancelled
// EvalWithContext would: Yaegi checks between statements that the run's ID
// is still the interpreter's, and this moves the interpreter's on. Yaegi
// exports no way to do it but through EvalWithContext and
// ExecuteWithContext, and both race with the code they stop (they return
// without waiting, and the stopped run then writes their results), so it is
// done here, on Yaegi's own atomic counter; TestInProcessStopsRunawayLoop
// fails if a new Yaegi moves it. Code blocked in a host call (a sleep, a
// channel receive) is not reached: the interpreter is dropped, and a
// worker process is killed.
func stopRuns(in *interp.Interpreter) {
	if id := runID(in); id != nil {
		atomic.AddUint64(id, 1)
	}
}

func runID(in *interp.Interpreter) *uint64 {
	f := reflect.ValueOf(in).Elem().FieldByName("id")
	if !f.IsValid() || f.Kind() != reflect.Uint64 {
		return nil
	}
	return (*uint64)(unsafe.Pointer(f.UnsafeAddr()))
}
