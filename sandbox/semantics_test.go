package sandbox_test

import (
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/sandbox"
)

// semanticsTool wraps body, the statements of a function returning a
// string, as a tool whose result is that string.
func semanticsTool(imports, decls, body string) string {
	return `// Package canary checks what Go means in the sandbox.
package canary

import (
	"context"
	"fmt"
` + imports + `
)

var _ = fmt.Sprint

// Input is empty.
type Input struct{}
` + decls + `
// Execute runs the canary.
func Execute(ctx context.Context, in Input) (string, error) {
` + body + `
}
`
}

// TestGoSemanticsCanaries checks, in each runner, that what Go 1.22+ means
// is what a tool gets: the answers below are native Go's.
func TestGoSemanticsCanaries(t *testing.T) {
	cases := []struct {
		name, imports, decls, body, want string
	}{
		{"loopvar three-clause closures", "", "", `var fs []func() int
	for i := 0; i < 3; i++ {
		fs = append(fs, func() int { return i })
	}
	var out []int
	for _, f := range fs {
		out = append(out, f())
	}
	return fmt.Sprint(out), nil`, "[0 1 2]"},
		{"loopvar range closures", "", "", `xs := []string{"a", "b", "c"}
	var fs []func() string
	for i, x := range xs {
		fs = append(fs, func() string { return fmt.Sprint(i, x) })
	}
	var out []string
	for _, f := range fs {
		out = append(out, f())
	}
	return fmt.Sprint(out), nil`, "[0a 1b 2c]"},
		{"loopvar goroutines", `"sync"`, "", `var mu sync.Mutex
	var wg sync.WaitGroup
	sum := 0
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			sum += 1 << i
			mu.Unlock()
		}()
	}
	wg.Wait()
	return fmt.Sprint(sum), nil`, "15"},
		{"loopvar changed but not captured", "", "", `var out []int
	for i := 0; i < 10; i++ {
		if i%2 == 0 {
			i++
		}
		out = append(out, i)
	}
	return fmt.Sprint(out), nil`, "[1 3 5 7 9]"},
		{"loopvar copy in the body", "", "", `var fs []func() int
	for i := 0; i < 6; i++ {
		v := i
		fs = append(fs, func() int { return v })
		i++
	}
	var out []int
	for _, f := range fs {
		out = append(out, f())
	}
	return fmt.Sprint(out), nil`, "[0 2 4]"},
		{"min max", "", "", `a, b := 3, 7
	f := 2.5
	return fmt.Sprint(min(a, b), max(a, b, 9), min(f, 1), max("pear", "apple"), min(4)), nil`, "3 9 1pear4"},
		{"min local shadow", "", "", `max := 0
	for _, x := range []int{3, 9, 2} {
		if x > max {
			max = x
		}
	}
	return fmt.Sprint(max), nil`, "9"},
		{"clear", "", "", `m := map[string]int{"a": 1, "b": 2}
	s := []int{1, 2, 3}
	clear(m)
	clear(s[1:])
	return fmt.Sprint(len(m), s), nil`, "0 [1 0 0]"},
		{"range over int", "", "", `n := 4
	var out []int
	for i := range n {
		out = append(out, i)
	}
	for range 2 {
		out = append(out, -1)
	}
	var u uint8 = 3
	for j := range u {
		out = append(out, int(j)*10)
	}
	for i := range 0 {
		out = append(out, i)
	}
	return fmt.Sprint(out), nil`, "[0 1 2 3 -1 -1 0 10 20]"},
		{"range over string", "", "", `s := "aé\xffb"
	var idx []int
	var rs []rune
	for i, c := range s {
		idx = append(idx, i)
		rs = append(rs, c)
	}
	var only []int
	for i := range s {
		only = append(only, i)
	}
	n := 0
	for range s {
		n++
	}
	type name string
	var nm name = "日本"
	for i, c := range nm {
		idx = append(idx, i)
		rs = append(rs, c)
	}
	return fmt.Sprint(idx, rs, only, n), nil`, "[0 1 3 4 0 3] [97 233 65533 98 26085 26412] [0 1 3 4] 4"},
		{"slices and maps", `"maps"
	"slices"
	"strings"`, "", `xs := []int{3, 1, 2, 3}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	words := []string{"pear", "Fig", "apple"}
	slices.SortFunc(words, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	r := []int{1, 2, 3}
	slices.Reverse(r)
	m := map[string]int{"a": 1}
	m2 := maps.Clone(m)
	m2["b"] = 2
	i, found := slices.BinarySearch(ys, 2)
	return fmt.Sprint(slices.Contains(xs, 2), slices.Index(xs, 2), slices.Max(xs), slices.Min(xs), ys, words, r,
		slices.Equal(xs, ys), slices.Compact(ys), len(m), maps.Equal(m, m2), i, found), nil`, "true 2 3 1 [1 2 3 0] [apple Fig pear] [3 2 1] false [1 2 3] 1 false 1 true"},
	}
	for name, r := range runners(t, testOptions(t)) {
		t.Run(name, func(t *testing.T) {
			for _, tt := range cases {
				t.Run(tt.name, func(t *testing.T) {
					res, err := run(t, r, "canary", semanticsTool(tt.imports, tt.decls, tt.body), "")
					if err != nil {
						t.Fatal(err)
					}
					if res.Output != tt.want {
						t.Errorf("got %s, want %s (native Go)", res.Output, tt.want)
					}
				})
			}
		})
	}
}

// TestGoSemanticsRefusals checks that what cannot be given Go's meaning
// exactly is refused with a message that says what to change, never run
// with the old meaning.
func TestGoSemanticsRefusals(t *testing.T) {
	src := semanticsTool("", "", `var fs []func() int
	for i := 0; i < 6; i++ {
		fs = append(fs, func() int { return i })
		i++
	}
	return fmt.Sprint(len(fs)), nil`)
	r := sandbox.NewInProcess(testOptions(t))
	defer r.Close()
	_, err := run(t, r, "canary", src, "")
	wantKind(t, err, adaptbot.FailCompile, "the loop variable i is both changed in the loop body and captured by a closure")
	problems := sandbox.CheckSemantics([]byte(src))
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "18:2: ") || !strings.Contains(problems[0], "change i only in the loop's post statement") {
		t.Errorf("CheckSemantics = %q", problems)
	}
}
