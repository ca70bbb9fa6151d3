package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot/sandbox"
)

// corpusCase is one assert of a corpus tool's output.
type corpusCase struct {
	Site int    `json:"site"`
	Got  string `json:"got"`
	Want string `json:"want"`
	Pass bool   `json:"pass"`
}

// corpusResult is what a corpus tool gave: its cases, or the error (a
// panic natively, any error in the sandbox).
type corpusResult struct {
	Cases []corpusCase `json:"cases"`
	Err   string       `json:"error,omitempty"`
}

// orderDependent are the corpus tasks whose canonical solution's answer
// depends on the order in which a map is ranged over, which Go leaves
// unspecified (and randomizes): neither native Go nor the sandbox has one
// answer, so for these only the type of each answer must match.
var orderDependent = map[string]string{
	"Go/95": "CheckDictCase stops at the second key it meets, so with three keys its answer depends on which come first",
}

// TestFidelity runs every task of the corpus, and the canaries, as tools
// in a pool of workers (the path tools take when served) and natively,
// built from the same sources by the go command, and requires the same
// value from every assert of every task; the canaries' asserts must hold
// too.
func TestFidelity(t *testing.T) {
	tools := loadCorpus(t)
	if len(tools) != 164 {
		t.Fatalf("the corpus has %d tasks, want HumanEval-X's 164", len(tools))
	}
	var fixed []string
	for _, tool := range tools {
		if len(tool.Imports) > 0 {
			fixed = append(fixed, fmt.Sprintf("%s %v", tool.Task, tool.Imports))
		}
	}
	t.Logf("imports corrected (as goimports would): %s", strings.Join(fixed, ", "))
	canaries := map[string]bool{}
	for _, task := range fidelityCanaries {
		name := strings.ReplaceAll(task.TaskID, "/", "_")
		tool, err := makeCorpusTool(task, name)
		if err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		tools = append(tools, tool)
		canaries[tool.Task] = true
	}

	// The native half starts first: building takes a while, and the
	// sandbox half does not need it.
	var native map[string]corpusResult
	var nativeErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		start := time.Now()
		var exe string
		if exe, nativeErr = buildNative(t.TempDir(), tools); nativeErr == nil {
			built := time.Since(start)
			native, nativeErr = runNative(exe, 1)
			t.Logf("native: built in %v, ran in %v", built.Round(time.Millisecond), (time.Since(start) - built).Round(time.Millisecond))
		}
	}()

	start := time.Now()
	interpreted := runInterpreted(t, tools)
	t.Logf("sandbox: ran in %v", time.Since(start).Round(time.Millisecond))
	<-built
	if nativeErr == errNoGo {
		t.Skip("the native half needs the go command, which is not on PATH; the sandbox half ran, and every assert held there: " + allPass(t, tools, interpreted))
	}
	if nativeErr != nil {
		t.Fatal(nativeErr)
	}
	cases, failedNatively := 0, 0
	for _, tool := range tools {
		got, want := interpreted[tool.Name], native[tool.Name]
		if got.Err != want.Err {
			t.Errorf("%s: the sandbox says %q, native Go says %q", tool.Task, got.Err, want.Err)
			continue
		}
		if len(got.Cases) != len(want.Cases) {
			t.Errorf("%s: %d asserts ran in the sandbox, %d natively", tool.Task, len(got.Cases), len(want.Cases))
		}
		for i := range min(len(got.Cases), len(want.Cases)) {
			g, w := got.Cases[i], want.Cases[i]
			cases++
			if !w.Pass {
				failedNatively++
			}
			switch {
			case canaries[tool.Task] && !g.Pass:
				t.Errorf("%s, assert %d (%s):\n  sandbox: %s\n  native:  %s\n  want:    %s", tool.Task, i, tool.Sites[w.Site], g.Got, w.Got, w.Want)
			case g == w:
			case orderDependent[tool.Task] != "" && typeOf(g.Got) == typeOf(w.Got):
				t.Logf("%s, assert %d: the sandbox gives %s, native Go %s; both are Go's: %s", tool.Task, i, g.Got, w.Got, orderDependent[tool.Task])
			default:
				t.Errorf("%s, assert %d (%s):\n  sandbox: %s (pass %v)\n  native:  %s (pass %v)\n  want:    %s",
					tool.Task, i, tool.Sites[w.Site], g.Got, g.Pass, w.Got, w.Pass, w.Want)
			}
		}
	}
	t.Logf("%d tasks, %d asserts compared; %d of them fail natively too", len(tools), cases, failedNatively)
}

// typeOf is the type in a recorded value, "bool" in "bool true".
func typeOf(recorded string) string {
	typ, _, _ := strings.Cut(recorded, " ")
	return typ
}

// allPass checks that every assert held in the sandbox, for when the native
// half cannot run, and says how many there were.
func allPass(t *testing.T, tools []corpusTool, results map[string]corpusResult) string {
	n := 0
	for _, tool := range tools {
		r := results[tool.Name]
		if r.Err != "" {
			t.Errorf("%s: %s", tool.Task, r.Err)
		}
		for _, c := range r.Cases {
			n++
			if !c.Pass {
				t.Errorf("%s (%s): got %s, want %s", tool.Task, tool.Sites[c.Site], c.Got, c.Want)
			}
		}
	}
	return fmt.Sprintf("%d asserts", n)
}

// runInterpreted runs every corpus tool in a pool of two workers, two calls
// at a time.
func runInterpreted(t *testing.T, tools []corpusTool) map[string]corpusResult {
	t.Helper()
	opts := testOptions(t)
	opts.CallTimeout = 2 * time.Minute // under -race, on a busy machine
	opts.QueueTimeout = time.Minute
	pool := newPool(t, opts)
	results := make([]corpusResult, len(tools))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range next {
				results[i] = runCorpusTool(pool, tools[i])
			}
		})
	}
	for i := range tools {
		next <- i
	}
	close(next)
	wg.Wait()
	out := map[string]corpusResult{}
	for i, tool := range tools {
		out[tool.Name] = results[i]
	}
	return out
}

func runCorpusTool(r sandbox.Runner, tool corpusTool) corpusResult {
	res, err := r.Run(context.Background(), sandbox.Call{Tool: tool.Name, Source: []byte(tool.Source), Input: []byte("{}")})
	if err != nil {
		return corpusResult{Err: err.Error()}
	}
	var out corpusResult
	if err := json.Unmarshal([]byte(res.Output), &out); err != nil {
		return corpusResult{Err: fmt.Sprintf("output %q: %v", res.Output, err)}
	}
	return out
}

// errNoGo is buildNative's error when the go command is not on PATH.
var errNoGo = fmt.Errorf("no go command")

// buildNative writes the corpus tools as files of one program in dir,
// with a main that runs them all, and builds it with the go command:
// offline, with the standard library only. Each tool's package-level names
// take its name as a prefix, so the tools share a package and the build
// compiles one package, not one per tool. The module's Go version is this
// repository's, so the loop variables mean what they mean in tools.
func buildNative(dir string, tools []corpusTool) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", errNoGo
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		return "", err
	}
	version := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if version == nil {
		return "", fmt.Errorf("../go.mod has no go line")
	}
	var calls strings.Builder
	for _, tool := range tools {
		src, err := prefixNames(tool.Source, tool.Name+"_")
		if err != nil {
			return "", fmt.Errorf("%s: %v", tool.Task, err)
		}
		if err := os.WriteFile(filepath.Join(dir, tool.Name+".go"), []byte(src), 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(&calls, "\t\tout[%q] = run(func() (any, error) { return %[1]s_Execute(ctx, %[1]s_Input{}) })\n", tool.Name)
	}
	files := map[string]string{
		"go.mod":  fmt.Sprintf("module fidelity\n\ngo %s\n", version[1]),
		"main.go": fmt.Sprintf(nativeMain, calls.String()),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	exe := filepath.Join(dir, "fidelity")
	cmd := exec.Command(goCmd, "build", "-o", exe, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the corpus natively: %v\n%s", err, out)
	}
	return exe, nil
}

// prefixNames returns the Go file src as a file of package main, with
// prefix before every name declared at its package level, where it is
// declared and wherever it is used.
func prefixNames(src, prefix string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return "", err
	}
	var at []int
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Obj != nil && f.Scope.Lookup(id.Name) == id.Obj {
			at = append(at, fset.Position(id.Pos()).Offset)
		}
		return true
	})
	sort.Sort(sort.Reverse(sort.IntSlice(at)))
	for _, i := range at {
		src = src[:i] + prefix + src[i:]
	}
	name := fset.Position(f.Name.Pos()).Offset
	return src[:name] + "main" + src[name+len(f.Name.Name):], nil
}

// nativeMain runs every corpus tool natively, rounds times, and prints the
// last results as JSON, then the time a round took.
const nativeMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"
)

type result struct {
	Value any    ` + "`json:\"value\"`" + `
	Err   string ` + "`json:\"error,omitempty\"`" + `
}

func run(f func() (any, error)) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{Err: fmt.Sprint("panic: ", p)}
		}
	}()
	v, err := f()
	if err != nil {
		return result{Err: err.Error()}
	}
	return result{Value: v}
}

func main() {
	rounds, _ := strconv.Atoi(os.Args[1])
	ctx := context.Background()
	out := map[string]result{}
	start := time.Now()
	for range rounds {
%s	}
	elapsed := time.Since(start) / time.Duration(rounds)
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
	fmt.Println(elapsed.Nanoseconds())
}
`

// runNative runs the native corpus rounds times and returns what its tools
// gave in the last round.
func runNative(exe string, rounds int) (map[string]corpusResult, error) {
	results, _, err := runNativeTimed(exe, rounds)
	return results, err
}

// runNativeTimed runs the native corpus rounds times and returns what its
// tools gave in the last round, and the time one round took.
func runNativeTimed(exe string, rounds int) (map[string]corpusResult, time.Duration, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe, fmt.Sprint(rounds))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("running the corpus natively: %v\n%s", err, stderr.Bytes())
	}
	var raw map[string]struct {
		Value corpusResult `json:"value"`
		Err   string       `json:"error"`
	}
	dec := json.NewDecoder(&stdout)
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, fmt.Errorf("the native corpus's output: %v", err)
	}
	var ns int64
	if _, err := fmt.Fscan(io.MultiReader(dec.Buffered(), &stdout), &ns); err != nil {
		return nil, 0, fmt.Errorf("the native corpus's time: %v", err)
	}
	out := map[string]corpusResult{}
	for name, r := range raw {
		v := r.Value
		if r.Err != "" {
			v = corpusResult{Err: r.Err}
		}
		out[name] = v
	}
	return out, time.Duration(ns), nil
}
