package failures

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"adaptbot"
)

// BenchmarkRecord is what a failed call costs the caller: the same case
// again (a tool that keeps failing one way), a new case each time (a tool
// failing on every input), and a new case with arguments at the cap.
func BenchmarkRecord(b *testing.B) {
	small := json.RawMessage(`{"text": "hello, world", "n": 3}`)
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", MaxArgs-12) + `"}`)
	bigArgs := func(i int) json.RawMessage {
		a := append(json.RawMessage(nil), big...)
		copy(a[9:], fmt.Sprintf("%08d", i))
		return a
	}
	for _, bc := range []struct {
		name string
		kind adaptbot.Failure
		args func(i int) json.RawMessage
	}{
		{"same_case", adaptbot.FailPanic, func(int) json.RawMessage { return small }},
		{"new_case", adaptbot.FailPanic, func(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)) }},
		{"new_case_2KiB_args", adaptbot.FailPanic, bigArgs},
		// Arguments the schema refused are validated as they are kept.
		{"new_case_2KiB_invalid_args", adaptbot.FailInvalidArgs, bigArgs},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Load(context.Background(), &Files{Dir: b.TempDir()}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			args := make([]json.RawMessage, 1024)
			for i := range args {
				args[i] = bc.args(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.Record(Call{Tool: "echo", Version: 1, Args: args[i%len(args)], Kind: bc.kind, Message: "runtime error: index out of range [0] with length 0", RequestID: "0123456789abcdef"})
			}
		})
	}
}
