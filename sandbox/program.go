package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"adaptbot/clip"
	"adaptbot/contract"

	"github.com/traefik/yaegi/interp"
)

// The host package is how the invoke wrapper reaches the call's context and
// input and hands back the result. Tools cannot import it: its path is not
// on the contract's allowlist, which is checked before interpreting.
const (
	hostPath  = "adaptbot/sandbox/host"
	hostKey   = hostPath + "/host"
	hostAlias = "adaptbotHost"
)

// sourceHash keys compiled tools, in hex: two versions of a tool never
// share one.
func sourceHash(tool string, src []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(src)
	return hex.EncodeToString(h.Sum(nil))
}

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
	raw := bytes.TrimSpace(s.input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		s.inputErr = err
		return err
	}
	if d.More() {
		s.inputErr = errors.New("trailing data after the JSON object")
		return s.inputErr
	}
	return nil
}

// checkInput refuses arguments that are not one JSON value (or nothing),
// before they are sent anywhere.
func checkInput(tool string, input []byte) error {
	if len(bytes.TrimSpace(input)) == 0 {
		return nil
	}
	var v json.RawMessage
	if err := json.Unmarshal(input, &v); err != nil {
		return &Error{Tool: tool, Kind: KindInput, Msg: "arguments are not valid JSON: " + clip.String(err.Error(), 4096)}
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
func checkSource(tool string, src []byte) (time.Duration, error) {
	spec, err := contract.Parse(tool, src)
	if err != nil {
		var ce *contract.Error
		if errors.As(err, &ce) {
			return 0, &Error{Tool: tool, Kind: KindCompile, Msg: "breaks the tool contract:\n- " + strings.Join(ce.Problems, "\n- ")}
		}
		return 0, &Error{Tool: tool, Kind: KindCompile, Msg: err.Error()}
	}
	return spec.Timeout, nil
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
		return nil, &Error{Tool: tool, Kind: KindCompile, Msg: err.Error()}
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
			return &Error{Tool: tool, Kind: KindTimeout, Msg: cancelledMsg + " while the tool was loading"}
		}
		return &Error{Tool: tool, Kind: KindTimeout, Msg: fmt.Sprintf("loading the tool (its package initialisers) ran past its %v time limit", limit)}
	}
	var p interp.Panic
	if errors.As(err, &p) {
		return &Error{Tool: tool, Kind: KindPanic, Msg: "panic while loading: " + clip.String(panicString(p.Value), 4096)}
	}
	// Yaegi gives positions without a file name: name the tool's file.
	msg := strings.ReplaceAll(err.Error(), interp.DefaultSourceName+":", "")
	msg = position.ReplaceAllString(msg, tool+".go:$1")
	return &Error{Tool: tool, Kind: KindCompile, Msg: msg}
}

// outcome is the result of one call as the runners report it, and as it
// crosses the worker pipe.
type outcome struct {
	Output   string        `json:"output,omitempty"`
	Kind     Kind          `json:"kind,omitempty"`
	Msg      string        `json:"msg,omitempty"`
	Duration time.Duration `json:"duration"`
}

func (o outcome) result(tool string) (Result, error) {
	if o.Kind != "" {
		return Result{Duration: o.Duration}, &Error{Tool: tool, Kind: o.Kind, Msg: o.Msg}
	}
	return Result{Output: o.Output, Duration: o.Duration}, nil
}

func failed(err error) outcome {
	var e *Error
	if errors.As(err, &e) {
		return outcome{Kind: e.Kind, Msg: e.Msg}
	}
	return outcome{Kind: KindCrash, Msg: err.Error()}
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
			return outcome{Kind: KindTimeout, Msg: timeoutMsg(ctx, limit), Duration: time.Since(start)}, false
		}
	}
	o := p.result(ctx, err, maxOutput)
	if o.Kind == KindTimeout {
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
		return outcome{Kind: KindPanic, Msg: clip.String(panicString(pe.Value), 4096)}
	case err != nil:
		return outcome{Kind: KindCrash, Msg: "interpreter: " + clip.String(err.Error(), 4096)}
	case s.inputErr != nil:
		return outcome{Kind: KindInput, Msg: "arguments do not match Input: " + clip.String(s.inputErr.Error(), 4096)}
	case !s.returned:
		return outcome{Kind: KindCrash, Msg: "Execute did not return"}
	case s.failed:
		msg := clip.String(s.errMsg, maxOutput)
		if ctx.Err() != nil {
			return outcome{Kind: KindTimeout, Msg: msg}
		}
		return outcome{Kind: KindTool, Msg: msg}
	}
	return encodeOutput(s.out, maxOutput)
}

// encodeOutput returns a string result as is and anything else as JSON,
// refusing results over the cap.
func encodeOutput(v any, maxOutput int) outcome {
	var out string
	if rv := reflect.ValueOf(v); rv.IsValid() && rv.Kind() == reflect.String {
		out = rv.String()
	} else {
		b, err := json.Marshal(v)
		if err != nil {
			return outcome{Kind: KindTool, Msg: "result cannot be encoded as JSON: " + clip.String(err.Error(), 4096)}
		}
		out = string(b)
	}
	if len(out) > maxOutput {
		return outcome{Kind: KindOutput, Msg: fmt.Sprintf("result is %s, over the %s output limit", sizeString(int64(len(out))), sizeString(int64(maxOutput)))}
	}
	return outcome{Output: out}
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

// errCallTimeout is the cause of a call's context when its time limit ends it.
var errCallTimeout = errors.New("call time limit")

func timeoutMsg(ctx context.Context, limit time.Duration) string {
	if context.Cause(ctx) == errCallTimeout || ctx.Err() == context.DeadlineExceeded {
		return fmt.Sprintf("ran past its %v time limit", limit)
	}
	return cancelledMsg
}

// cancelledMsg is the timeout message of a call its caller gave up on.
const cancelledMsg = "cancelled by the caller"

// panicString formats a panic's value. The value may be the tool's own type
// whose Error or String method is interpreted code that never returns, so
// anything but a string is formatted under a deadline.
func panicString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	done := make(chan string, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- fmt.Sprintf("a %T whose Error method panics", v)
			}
		}()
		done <- fmt.Sprint(v)
	}()
	select {
	case s := <-done:
		return s
	case <-time.After(100 * time.Millisecond):
		return fmt.Sprintf("a %T whose Error method does not return", v)
	}
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
