package sandbox_test

import (
	"testing"

	"adaptbot"
	"adaptbot/sandbox"
)

// fidelityCanaries are tasks in the corpus's shape, one for each way the
// interpreter's Go was found to differ from Go's (issue 29): they run as
// tools beside the corpus, in the sandbox and natively, and each of their
// asserts must both match native Go and hold (the wanted values are what
// Go 1.22 and later give).
var fidelityCanaries = []corpusTask{{
	TaskID: "canary/loop_variables",
	Prompt: `
// ThreeClause collects closures over a three-clause loop's variable.
func ThreeClause() []int {
	var fs []func() int
	for i := 0; i < 3; i++ {
		fs = append(fs, func() int { return i })
	}
	var out []int
	for _, f := range fs {
		out = append(out, f())
	}
	return out
}

// RangeClosures collects closures over both variables of a range loop.
func RangeClosures(xs []string) []string {
	var fs []func() string
	for i, x := range xs {
		fs = append(fs, func() string { return fmt.Sprint(i, x) })
	}
	var out []string
	for _, f := range fs {
		out = append(out, f())
	}
	return out
}

// Pointers keeps the address of each iteration's variable. (A
// three-clause loop's, &i, is refused: a write through it must reach the
// next iteration, which the rewrite cannot give.)
func Pointers(xs []int) []int {
	var ps []*int
	for _, x := range xs {
		ps = append(ps, &x)
	}
	var out []int
	for _, p := range ps {
		out = append(out, *p)
	}
	return out
}

// Deferred defers a closure over the loop variable in each iteration.
func Deferred() (out []int) {
	func() {
		for i := 0; i < 3; i++ {
			defer func() { out = append(out, i) }()
		}
	}()
	return out
}

type counter struct{ n int }

func (c *counter) get() int { return c.n }

// MethodValues keeps a method value of each iteration's variable: the
// pointer receiver takes its address.
func MethodValues() []int {
	var fs []func() int
	for _, c := range []counter{{1}, {2}, {3}} {
		fs = append(fs, c.get)
	}
	var out []int
	for _, f := range fs {
		out = append(out, f())
	}
	return out
}

type valueCounter struct{ n int }

func (c valueCounter) get() int { return c.n }

// ValueReceiver keeps a method value with a value receiver: the receiver
// is copied when the method value is made.
func ValueReceiver() int {
	c := valueCounter{1}
	get := c.get
	c.n = 2
	return get()
}

// Goroutines starts a goroutine per iteration, each adding its own bit
// once the loop is over.
func Goroutines(n int) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sum := 0
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			mu.Lock()
			sum += 1 << i
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return sum
}

// Spawn starts a goroutine per iteration, each adding its own number as
// soon as it runs, while the loop goes on.
func Spawn(n int) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sum := 0
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			sum += i
			mu.Unlock()
		}()
	}
	wg.Wait()
	return sum
}

// Skips changes the loop variable in the body, captured by nothing.
func Skips() []int {
	var out []int
	for i := 0; i < 10; i++ {
		if i%2 == 0 {
			i++
		}
		out = append(out, i)
	}
	return out
}
`,
	Test: `func TestLoopVariables(t *testing.T) {
	assert := assert.New(t)
	assert.Equal([]int{0, 1, 2}, ThreeClause())
	assert.Equal([]string{"0a", "1b", "2c"}, RangeClosures([]string{"a", "b", "c"}))
	assert.Equal([]int{7, 8, 9}, Pointers([]int{7, 8, 9}))
	assert.Equal([]int{2, 1, 0}, Deferred())
	assert.Equal([]int{1, 2, 3}, MethodValues())
	assert.Equal(1, ValueReceiver())
	assert.Equal(15, Goroutines(4))
	for range 20 {
		assert.Equal(4950, Spawn(100))
	}
	assert.Equal([]int{1, 3, 5, 7, 9}, Skips())
}
`}, {
	TaskID: "canary/min_max_clear",
	Prompt: `
// MinMax calls the builtins min and max.
func MinMax() []any {
	a, b := 3, 7
	f := 2.5
	var u uint8 = 200
	var g float64 = max(1, 2)
	return []any{max(1, 2.5), min(3, 'a'), g, min("b", "a", "c"), max(-2, -(1)),
		min(a, b), max(a, b, 9), min(f, 1), max("pear", "apple"), min(4), max(u, 100),
		math.IsNaN(max(1.0, math.NaN(), 2)), min(-1.5, math.Inf(-1)), max(0, f), min(10, a, 2.0), max(1, (u))}
}

// Shadowed declares its own max.
func Shadowed(xs []int) int {
	max := 0
	for _, x := range xs {
		if x > max {
			max = x
		}
	}
	return max
}

// Clear clears a map and part of a slice.
func Clear() (int, []int) {
	m := map[string]int{"a": 1, "b": 2}
	s := []int{1, 2, 3}
	clear(m)
	clear(s[1:])
	return len(m), s
}
`,
	Test: `func TestMinMaxClear(t *testing.T) {
	assert := assert.New(t)
	assert.Equal([]any{2.5, int32(3), 2.0, "a", -1, 3, 9, 1.0, "pear", 4, uint8(200), true, math.Inf(-1), 2.5, 2, uint8(200)}, MinMax())
	assert.Equal(9, Shadowed([]int{3, 9, 2}))
	n, s := Clear()
	assert.Equal(0, n)
	assert.Equal([]int{1, 0, 0}, s)
}
`}, {
	TaskID: "canary/range_over_int",
	Prompt: `
// RangeInt ranges over integers of several types.
func RangeInt(n int) []int {
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
	return out
}

// Types says the type of the loop variable over a typed integer and a
// constant.
func Types() string {
	var u uint16 = 1
	s := ""
	for j := range u {
		s += fmt.Sprintf("%T ", j)
	}
	for j := range 1 {
		s += fmt.Sprintf("%T", j)
	}
	return s
}
`,
	Test: `func TestRangeOverInt(t *testing.T) {
	assert := assert.New(t)
	assert.Equal([]int{0, 1, 2, 3, -1, -1, 0, 10, 20}, RangeInt(4))
	assert.Equal("uint16 int", Types())
}
`}, {
	TaskID: "canary/range_over_string",
	Prompt: `
// Timeout is the server's default: a long text must be answered within it.
const Timeout = 10 * time.Second

// Positions ranges over a string: byte positions, runes, an invalid byte.
func Positions(s string) ([]int, []rune, []int) {
	var idx, only []int
	var rs []rune
	for i, c := range s {
		idx = append(idx, i)
		rs = append(rs, c)
	}
	for i := range s {
		only = append(only, i)
	}
	return idx, rs, only
}

// Letters counts the letters of an n-character text, and sums the byte
// positions of its characters.
func Letters(n int) (int, int) {
	text := string([]rune(strings.Repeat("héllo wörld ", n/12+1))[:n])
	letters, sum := 0, 0
	for i, c := range text {
		if unicode.IsLetter(c) {
			letters++
		}
		sum += i
	}
	return letters, sum
}
`,
	Test: `func TestRangeOverString(t *testing.T) {
	assert := assert.New(t)
	idx, rs, only := Positions("aé\xffb日")
	assert.Equal([]int{0, 1, 3, 4, 5}, idx)
	assert.Equal([]rune{'a', 'é', 0xfffd, 'b', '日'}, rs)
	assert.Equal([]int{0, 1, 3, 4, 5}, only)
	letters, sum := Letters(80000)
	assert.Equal(66667, letters)
	assert.Equal(3733306666, sum)
}
`}, {
	TaskID: "canary/slices_maps",
	Prompt: `
// Slices calls the slices helpers tools use.
func Slices() []any {
	xs := []int{3, 1, 2, 3}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	words := []string{"pear", "Fig", "apple"}
	slices.SortFunc(words, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	r := []int{1, 2, 3}
	slices.Reverse(r)
	i, found := slices.BinarySearch(ys, 2)
	return []any{slices.Contains(xs, 2), slices.Index(xs, 2), slices.IndexFunc(xs, func(x int) bool { return x < 3 }),
		slices.Max(xs), slices.Min(xs), ys, words, r, slices.Equal(xs, ys), slices.IsSorted(ys), i, found,
		slices.Compact([]int{1, 1, 2, 2, 2, 3})}
}

// Maps calls the maps helpers tools use.
func Maps() []any {
	m := map[string]int{"a": 1, "b": 2}
	c := maps.Clone(m)
	same := maps.Equal(m, c)
	maps.Copy(c, map[string]int{"c": 3})
	maps.DeleteFunc(c, func(k string, v int) bool { return v == 1 })
	return []any{same, maps.Equal(m, c), c}
}
`,
	Test: `func TestSlicesMaps(t *testing.T) {
	assert := assert.New(t)
	assert.Equal([]any{true, 2, 1, 3, 1, []int{1, 2, 3, 3}, []string{"apple", "Fig", "pear"}, []int{3, 2, 1}, false, true, 1, true, []int{1, 2, 3}}, Slices())
	assert.Equal([]any{true, false, map[string]int{"b": 2, "c": 3}}, Maps())
}
`}, {
	TaskID: "canary/package_level_generics",
	Prompt: `
func indexOf[E comparable](s []E, v E) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}

var (
	at     = slices.Index([]string{"a", "b", "c"}, "c")
	sorted = slices.IsSorted([]int{1, 2, 3})
	same   = maps.Equal(map[string]int{"a": 1}, map[string]int{"a": 1})
	own    = indexOf([]int{4, 5}, 5)
)

// Globals returns package-level variables set by calls of generic
// functions.
func Globals() []any { return []any{at, sorted, same, own} }
`,
	Test: `func TestPackageLevelGenerics(t *testing.T) {
	assert := assert.New(t)
	assert.Equal([]any{2, true, true, 1}, Globals())
}
`}}

// TestInterpreterRefusals checks that what the interpreter cannot do is
// refused with a message that says what to write instead, never run with a
// wrong value or a panic: generic functions at package level, and range
// over a function (iterators).
func TestInterpreterRefusals(t *testing.T) {
	r := sandbox.NewInProcess(testOptions(t))
	defer r.Close()
	const iterator = "range over a function (an iterator, Go 1.23) is not supported by the interpreter: call the function with a yield function"
	for _, tt := range []struct{ decls, body, msg string }{
		{`var m = maps.Clone(map[string]int{"a": 1})`, `return "", nil`,
			"a package-level variable cannot be initialised by a generic function whose result type depends on its type parameters: set it in a function instead"},
		{`var contains = slices.Contains[int]`, `return "", nil`,
			"a package-level variable cannot hold an instantiated generic function: call it from a function instead"},
		{`func count(n int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for i := 0; i < n; i++ {
			if !yield(i) {
				return
			}
		}
	}
}`, `s := 0
	for i := range count(3) {
		s += i
	}
	return fmt.Sprint(s), nil`, iterator},
		{`func pairs(yield func(string, int) bool) { yield("a", 1) }`, `s := ""
	for k, v := range pairs {
		s += fmt.Sprint(k, v)
	}
	return s, nil`, iterator},
	} {
		src := semanticsTool("\"maps\"\n\t\"slices\"", tt.decls+"\n\nvar _, _ = maps.Equal(map[string]int{}, nil), slices.Equal([]int{}, nil)\n", tt.body)
		_, err := run(t, r, "canary", src, "")
		wantKind(t, err, adaptbot.FailCompile, tt.msg)
	}
}
