package generator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// textTool is a realistic tool of about a hundred lines for the benchmark.
const textTool = `// Package text_tools transforms and inspects text: reverse it, change its
// case, count its vowels, apply a Caesar cipher, or test for a palindrome.
package text_tools

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// Input is the text and the operation.
type Input struct {
	Text      string ` + "`json:\"text\" jsonschema:\"the text to work on\"`" + `
	Operation string ` + "`json:\"operation\" jsonschema:\"reverse, upper, lower, title, vowels, caesar or palindrome\"`" + `
	Shift     int    ` + "`json:\"shift,omitempty\" jsonschema:\"for caesar: how many letters to shift, default 3\"`" + `
}

// Result is the outcome of an operation.
type Result struct {
	Operation string ` + "`json:\"operation\"`" + `
	Output    string ` + "`json:\"output\"`" + `
	Count     int    ` + "`json:\"count,omitempty\"`" + `
}

// Execute applies in.Operation to in.Text.
func Execute(ctx context.Context, in Input) (Result, error) {
	op := strings.ToLower(strings.TrimSpace(in.Operation))
	res := Result{Operation: op}
	switch op {
	case "reverse":
		res.Output = reverse(in.Text)
	case "upper":
		res.Output = strings.ToUpper(in.Text)
	case "lower":
		res.Output = strings.ToLower(in.Text)
	case "title":
		res.Output = title(in.Text)
	case "vowels":
		res.Count = vowels(in.Text)
		res.Output = fmt.Sprintf("%d vowels", res.Count)
	case "caesar":
		shift := in.Shift
		if shift == 0 {
			shift = 3
		}
		res.Output = caesar(in.Text, shift)
	case "palindrome":
		if isPalindrome(in.Text) {
			res.Output = "yes"
		} else {
			res.Output = "no"
		}
	default:
		return Result{}, fmt.Errorf("unknown operation %q: use reverse, upper, lower, title, vowels, caesar or palindrome", in.Operation)
	}
	return res, nil
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func title(s string) string {
	words := strings.Fields(s)
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}

func vowels(s string) int {
	n := 0
	for _, r := range strings.ToLower(s) {
		if strings.ContainsRune("aeiou", r) {
			n++
		}
	}
	return n
}

func caesar(s string, shift int) string {
	shift = ((shift % 26) + 26) % 26
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune('a' + (r-'a'+rune(shift))%26)
		case r >= 'A' && r <= 'Z':
			b.WriteRune('A' + (r-'A'+rune(shift))%26)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPalindrome(s string) bool {
	var letters []rune
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			letters = append(letters, r)
		}
	}
	for i, j := 0, len(letters)-1; i < j; i, j = i+1, j-1 {
		if letters[i] != letters[j] {
			return false
		}
	}
	return len(letters) > 0
}
`

var textExamples = []Example{
	{Input: json.RawMessage(`{"text": "Hello", "operation": "reverse"}`), Contains: "olleH"},
	{Input: json.RawMessage(`{"text": "abc xyz", "operation": "caesar"}`), Contains: "def abc"},
	{Input: json.RawMessage(`{"text": "A man, a plan, a canal: Panama", "operation": "palindrome"}`), Matches: `"output":"yes"`},
}

func TestGatePassesTheTextTool(t *testing.T) {
	if n := strings.Count(textTool, "\n"); n < 95 || n > 130 {
		t.Errorf("textTool has %d lines; the benchmark promises about 100", n)
	}
	f := newFixture(t, nil)
	v, err := f.gen.gate(t.Context(), "text_tools", candidate{Source: textTool, Examples: textExamples}, func(Event) {})
	if err != nil || v.tool == nil {
		t.Fatalf("gate: %q, %v", v.problems, err)
	}
}

func TestGateStopsOnAClosedSandbox(t *testing.T) {
	f := newFixture(t, nil)
	f.runner.Close()
	_, err := f.gen.gate(t.Context(), "text_tools", candidate{Source: textTool, Examples: textExamples}, func(Event) {})
	if err == nil {
		t.Fatal("gate blamed the candidate for a closed sandbox")
	}
}

func TestGateReportsEveryExampleThatFails(t *testing.T) {
	f := newFixture(t, nil)
	bad := append([]Example{}, textExamples...)
	bad[0].Contains = "Hello"
	bad = append(bad, Example{Input: json.RawMessage(`{"text": "x", "operation": "shout"}`), Contains: "X"})
	v, err := f.gen.gate(t.Context(), "text_tools", candidate{Source: textTool, Examples: bad}, func(Event) {})
	if err != nil || v.tool != nil || len(v.problems) != 2 {
		t.Fatalf("problems = %q, %v", v.problems, err)
	}
	if !strings.Contains(v.problems[0], `example 1 of 4 (input {"text":"Hello","operation":"reverse"}): the output`) ||
		!strings.Contains(v.problems[1], `example 4 of 4 (input {"text":"x","operation":"shout"}): Execute returned an error: unknown operation "shout"`) {
		t.Errorf("problems = %q", v.problems)
	}
}

// BenchmarkGate measures the gate without a model: extract, parse, gofmt,
// contract, compile in the in-process sandbox and run three examples, for a
// tool of about a hundred lines. Each iteration's source differs by a
// comment, so the sandbox's compile cache never answers.
func BenchmarkGate(b *testing.B) {
	runner := newRunner(b)
	gen := &Generator{opts: Options{Runner: runner, ExampleTimeout: DefaultExampleTimeout}}
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		c := candidate{Source: textTool + fmt.Sprintf("\n// build %d\n", i), Examples: textExamples}
		v, err := gen.gate(ctx, "text_tools", c, func(Event) {})
		if err != nil || v.tool == nil {
			b.Fatalf("gate: %q, %v", v.problems, err)
		}
	}
}
