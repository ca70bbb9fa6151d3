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
	"reflect"
	"strings"
	"time"

	"adaptbot"
	"adaptbot/clip"
)

// This file holds what a worker needs of a call's outcome whatever runs the
// tool, the interpreter (program.go) or a native build (native_worker.go).

// sourceHash keys compiled tools, in hex: two versions of a tool never
// share one.
func sourceHash(tool string, src []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(src)
	return hex.EncodeToString(h.Sum(nil))
}

// outcome is the result of one call as the runners report it, and as it
// crosses the worker pipe.
type outcome struct {
	Output   string           `json:"output,omitempty"`
	Kind     adaptbot.Failure `json:"kind,omitempty"`
	Msg      string           `json:"msg,omitempty"`
	Duration time.Duration    `json:"duration"`
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
	return outcome{Kind: adaptbot.FailCrash, Msg: err.Error()}
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
			return outcome{Kind: adaptbot.FailError, Msg: "result cannot be encoded as JSON: " + clip.String(err.Error(), 4096)}
		}
		out = string(b)
	}
	if len(out) > maxOutput {
		return outcome{Kind: adaptbot.FailBadOutput, Msg: fmt.Sprintf("result is %s, over the %s output limit", sizeString(int64(len(out))), sizeString(int64(maxOutput)))}
	}
	return outcome{Output: out}
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

// decodeInput decodes a call's arguments into v, the tool's Input: nothing
// or null is an empty object, and unknown fields or trailing data are
// errors.
func decodeInput(input []byte, v any) error {
	raw := bytes.TrimSpace(input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return inputProblem(err)
	}
	if d.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// inputProblem says why arguments did not decode into the tool's Input in
// the caller's terms: the field as the arguments name it and what it must
// be, never Go's struct and type names.
func inputProblem(err error) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		where := "the arguments"
		if te.Field != "" {
			where = fmt.Sprintf("%q", te.Field)
		}
		got := map[string]string{"string": "text", "number": "a number", "bool": "true or false", "array": "a list", "object": "an object"}[te.Value]
		if n, ok := strings.CutPrefix(te.Value, "number "); ok {
			got = n
		}
		if got == "" {
			got = te.Value
		}
		return fmt.Errorf("%s must be %s, not %s", where, kindWords(te.Type), got)
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("not valid JSON: it goes wrong at character %d", se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("not valid JSON: it ends too soon")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("%s is not a parameter of the tool", name)
	}
	return errors.New(strings.TrimPrefix(msg, "json: "))
}

// kindWords says what a Go type holds, in JSON's terms.
func kindWords(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.String:
		return "text (a JSON string)"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return fmt.Sprintf("a whole number from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "a whole number from 0"
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<t.Bits()-1)
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list (a JSON array)"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindWords(t.Elem())
	}
	return "another kind of value"
}
