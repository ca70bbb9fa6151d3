package sandbox_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"adaptbot/sandbox"
)

const runeCounter = `// Package rune_counter counts the letters of a text.
package rune_counter

import (
	"context"
	"unicode"
)

// Input holds the text.
type Input struct {
	Text string ` + "`json:\"text\"`" + `
}

// Execute counts the letters, ranging over the string.
func Execute(ctx context.Context, in Input) (int, error) {
	n := 0
	for _, c := range in.Text {
		if unicode.IsLetter(c) {
			n++
		}
	}
	return n, nil
}
`

// BenchmarkRangeString80k ranges over an 80,000-character string in a tool
// (in-process, so the figure is the interpreter's, not the pipe's).
func BenchmarkRangeString80k(b *testing.B) {
	text := string([]rune(strings.Repeat("héllo wörld ", 80000/12+1))[:80000])
	input, _ := json.Marshal(map[string]string{"text": text})
	opts := testOptions(b)
	opts.CallTimeout = 0
	r := sandbox.NewInProcess(opts)
	defer r.Close()
	call := sandbox.Call{Tool: "rune_counter", Source: []byte(runeCounter), Input: input}
	if _, err := r.Run(context.Background(), call); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Run(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}
