package service_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/sandbox"
	"adaptbot/service"
)

// BenchmarkRecordFailure is what a failed call costs the service on top of
// the call: the failure case recorded (the same case again, or a new one
// each time), automatic repair off.
func BenchmarkRecordFailure(b *testing.B) {
	w := newLearningWorld(b, nil, service.Learning{})
	err := &sandbox.Error{Tool: "first_word", Kind: adaptbot.FailPanic, Msg: "runtime error: index out of range [0] with length 0"}
	args := make([]json.RawMessage, 1024)
	for i := range args {
		args[i] = json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))
	}
	for _, bc := range []struct {
		name string
		args func(i int) json.RawMessage
	}{
		{"same_case", func(int) json.RawMessage { return args[0] }},
		{"new_case", func(i int) json.RawMessage { return args[i%len(args)] }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w.svc.RecordFailure(service.ToolFailure{Tool: "first_word", Version: 1, Args: bc.args(i), Err: err, RequestID: "0123456789abcdef"})
			}
		})
	}
}

// BenchmarkRunSucceeds is a direct run that succeeds, with failure cases
// kept and without: the success path records nothing, so the two are the
// same within noise.
func BenchmarkRunSucceeds(b *testing.B) {
	for _, bc := range []struct {
		name string
		keep bool
	}{{"learning_off", false}, {"learning_on", true}} {
		b.Run(bc.name, func(b *testing.B) {
			w := newLearningWorld(b, nil, service.Learning{})
			svc := w.svc
			if !bc.keep {
				svc = service.New(service.Deps{Tools: w.box, Registry: w.reg, Rows: w.rows, Traces: w.traces})
			}
			args := json.RawMessage(`{"text":"hello world"}`)
			if _, err := svc.Run(as(bob), "first_word", args); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := svc.Run(as(bob), "first_word", args); err != nil {
					b.Fatal(errors.Unwrap(err))
				}
			}
		})
	}
}

// BenchmarkNoteChat is what watching for recurring chains adds to a chat
// that ran two tools: a length check and a send to a bounded queue, which
// the learning goroutine drains (here, nobody does: the queue stays full,
// the worst case, and the chat is dropped without waiting).
func BenchmarkNoteChat(b *testing.B) {
	for _, mode := range []adaptbot.Mode{adaptbot.ModeOff, adaptbot.ModePropose} {
		b.Run(string(mode), func(b *testing.B) {
			svc := service.New(service.Deps{Learning: service.Learning{Skills: mode}})
			res := &agent.Result{Tools: []string{"unit_converter", "calculator"}}
			b.ReportAllocs()
			for b.Loop() {
				service.NoteChat(svc, "r1", "p-ana", "convert 5 miles to km, then multiply by 3", res)
			}
		})
	}
}
