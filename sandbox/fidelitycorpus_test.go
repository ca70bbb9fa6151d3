package sandbox_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The fidelity corpus: HumanEval-X's Go tasks (sandbox/testdata/humaneval-x,
// whose README says where it comes from), each made into a tool that runs
// the task's canonical solution under the task's own test. The test's
// testify calls, assert.Equal(want, got), become calls of a small recorder
// declared in the tool, so the tool's output lists, assert by assert, the
// value the solution returned: the same source then runs in the sandbox
// and natively, and the two lists must match.

// corpusPath is the corpus, as committed.
const corpusPath = "testdata/humaneval-x/humaneval_go.jsonl.gz"

// corpusTask is one record of the corpus, as HumanEval-X writes it.
type corpusTask struct {
	TaskID    string `json:"task_id"`
	Prompt    string `json:"prompt"` // imports, doc comment and signature
	Solution  string `json:"canonical_solution"`
	Test      string `json:"test"` // func TestX(t *testing.T) with testify asserts
	TestSetup string `json:"test_setup"`
	Import    string `json:"import"`
}

// corpusTool is a task made into a tool.
type corpusTool struct {
	Task   string   // Go/0
	Name   string   // humaneval_go_0, the tool's (and its package's) name
	Source string   // the tool's source
	Sites  []string // the assert statements of the test, by site number
	// Imports is how the task's own imports were corrected: the imports
	// its source needs that the task does not declare (it relied on
	// goimports), and those it declares but does not use ("-path").
	Imports []string
}

// loadCorpus reads the corpus and makes each task a tool.
func loadCorpus(t testing.TB) []corpusTool {
	t.Helper()
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var tools []corpusTool
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var task corpusTask
		if err := json.Unmarshal(sc.Bytes(), &task); err != nil {
			t.Fatalf("%s: record %d: %v", corpusPath, len(tools)+1, err)
		}
		var num int
		if _, err := fmt.Sscanf(task.TaskID, "Go/%d", &num); err != nil {
			t.Fatalf("%s: task id: %v", task.TaskID, err)
		}
		tool, err := makeCorpusTool(task, fmt.Sprintf("humaneval_go_%d", num))
		if err != nil {
			t.Fatalf("%s: %v", task.TaskID, err)
		}
		tools = append(tools, tool)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tools
}

// stdPackages maps the package names the corpus uses to their import
// paths: how goimports would complete a task's imports.
var stdPackages = map[string]string{
	"bytes": "bytes", "context": "context", "fmt": "fmt", "math": "math", "md5": "crypto/md5",
	"maps": "maps", "rand": "math/rand", "regexp": "regexp", "slices": "slices", "sort": "sort", "strconv": "strconv",
	"strings": "strings", "sync": "sync", "time": "time", "unicode": "unicode", "utf8": "unicode/utf8",
}

// recorder is what the test's testify calls become, and the tool's entry
// point. Its names start with fidelity, which no task uses. A value is
// recorded with its type and %#v (so 1 and 1.0, or nil and "", differ);
// an assert holds when the two texts are equal, which is testify's
// ObjectsAreEqual for the values this corpus compares.
const recorder = `
// fidelityT stands for the test's *testing.T.
type fidelityT struct{ cases []Case }

// Case is one assert of the test: the value the solution gave, the value
// the test wants, and whether they are equal.
type Case struct {
	Site int    ` + "`json:\"site\"`" + `
	Got  string ` + "`json:\"got\"`" + `
	Want string ` + "`json:\"want\"`" + `
	Pass bool   ` + "`json:\"pass\"`" + `
}

func fidelityNew(t *fidelityT) *fidelityT { return t }

// Equal records an assert.Equal(want, got) made at the numbered site.
func (t *fidelityT) Equal(site int, want, got any, msg ...any) bool {
	g, w := fmt.Sprintf("%T %#v", got, got), fmt.Sprintf("%T %#v", want, want)
	t.cases = append(t.cases, Case{Site: site, Got: g, Want: w, Pass: g == w})
	return g == w
}

// Input is empty: the test holds the inputs.
type Input struct{}

// Output lists the test's asserts in the order they ran.
type Output struct {
	Cases []Case ` + "`json:\"cases\"`" + `
}

// Execute runs the task's test against its solution.
func Execute(ctx context.Context, in Input) (Output, error) {
	t := &fidelityT{}
	TEST(t)
	return Output{Cases: t.cases}, nil
}
`

// seeded is declared when the test draws random numbers: the same draws
// natively and in the sandbox, and again on each call.
const seeded = `
var fidelityRand *rand.Rand
var fidelitySeeds int64

// fidelitySeed stands for time.Now().UnixNano() as a seed.
func fidelitySeed() int64 {
	fidelitySeeds++
	return fidelitySeeds
}
`

// makeCorpusTool makes a task the tool name: its solution, its test with asserts
// numbered and random numbers seeded, the recorder, and the imports all of
// that uses.
func makeCorpusTool(task corpusTask, name string) (corpusTool, error) {
	tool := corpusTool{Task: task.TaskID, Name: name}
	solution, declared, err := withoutImports(task.Prompt + task.Solution)
	if err != nil {
		return tool, fmt.Errorf("solution: %v", err)
	}
	_, setup, err := withoutImports(task.TestSetup)
	if err != nil {
		return tool, fmt.Errorf("test setup: %v", err)
	}
	for _, p := range setup {
		if p != "testing" && p != "github.com/stretchr/testify/assert" && !slices.Contains(declared, p) {
			declared = append(declared, p)
		}
	}
	test, testName, sites, random, err := rewriteTest(task.Test)
	if err != nil {
		return tool, fmt.Errorf("test: %v", err)
	}
	tool.Sites = sites
	body := solution + "\n" + test + "\n" + strings.Replace(recorder, "TEST(t)", testName+"(t)", 1)
	if random {
		body += seeded
	}
	used, err := usedPackages(body)
	if err != nil {
		return tool, err
	}
	for _, p := range used {
		if !slices.Contains(declared, p) && p != "context" && p != "fmt" && !(random && p == "math/rand") {
			tool.Imports = append(tool.Imports, p)
		}
	}
	for _, p := range declared {
		if !slices.Contains(used, p) {
			tool.Imports = append(tool.Imports, "-"+p)
		}
	}
	var imports strings.Builder
	for _, p := range used {
		fmt.Fprintf(&imports, "\t%q\n", p)
	}
	tool.Source = fmt.Sprintf("// Package %s runs HumanEval-X task %s, its canonical solution under its own test, as a tool.\npackage %[1]s\n\nimport (\n%[3]s)\n\n%[4]s",
		tool.Name, tool.Task, imports.String(), body)
	return tool, nil
}

// withoutImports returns the Go declarations src holds without its import
// declarations, and the paths those imported.
func withoutImports(src string) (string, []string, error) {
	head := "package p\n"
	if strings.HasPrefix(src, "package ") {
		head = "" // the test setup is a whole file
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+src, parser.ImportsOnly)
	if err != nil {
		return "", nil, err
	}
	var paths []string
	end := len(head)
	for _, s := range f.Imports {
		paths = append(paths, strings.Trim(s.Path.Value, `"`))
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			end = fset.Position(g.End()).Offset
		}
	}
	return (head + src)[end:], paths, nil
}

// rewriteTest makes a task's test run in a tool: *testing.T and
// assert.New become the recorder's, each assert.Equal gets its site number
// as first argument, and random numbers come from a seeded source (the
// global functions of math/rand, and seeds taken from the clock). It
// returns the test, its function's name, the text of each assert by site,
// and whether the test draws random numbers.
func rewriteTest(src string) (string, string, []string, bool, error) {
	const head = "package p\n"
	src = head + src
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return "", "", nil, false, err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	type edit struct {
		at, end int
		text    string
	}
	var edits []edit
	var sites []string
	name, random := "", false
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") {
			name = fn.Name.Name
		}
	}
	if name == "" {
		return "", "", nil, false, fmt.Errorf("no test function")
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch {
			case x.Name == "assert" && sel.Sel.Name == "New":
				edits = append(edits, edit{off(sel.Pos()), off(sel.End()), "fidelityNew"})
			case x.Name == "assert" && sel.Sel.Name == "Equal":
				edits = append(edits, edit{off(n.Lparen) + 1, off(n.Lparen) + 1, fmt.Sprintf("%d, ", len(sites))})
				p := fset.Position(n.Pos())
				sites = append(sites, fmt.Sprintf("line %d: %s", p.Line-1, src[off(n.Pos()):off(n.End())]))
			case x.Name == "rand" && x.Obj == nil && sel.Sel.Name != "New" && sel.Sel.Name != "NewSource":
				edits = append(edits, edit{off(x.Pos()), off(x.End()), "fidelityRand"})
				random = true
			}
		case *ast.SelectorExpr:
			// time.Now().UnixNano(): the call's selector is on a call.
			if call, ok := n.X.(*ast.CallExpr); ok && n.Sel.Name == "UnixNano" {
				if s, ok := call.Fun.(*ast.SelectorExpr); ok {
					if x, ok := s.X.(*ast.Ident); ok && x.Name == "time" && s.Sel.Name == "Now" {
						edits = append(edits, edit{off(n.Pos()), off(n.End()) + len("()"), "fidelitySeed()"})
						random = true
						return false
					}
				}
			}
		case *ast.StarExpr:
			if sel, ok := n.X.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "testing" && sel.Sel.Name == "T" {
					edits = append(edits, edit{off(sel.Pos()), off(sel.End()), "fidelityT"})
				}
			}
		}
		return true
	})
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	out := src
	for _, e := range edits {
		out = out[:e.at] + e.text + out[e.end:]
	}
	out = out[len(head):]
	if random {
		// Each call draws the same numbers.
		out = strings.Replace(out, "fidelityNew(t)", "fidelityNew(fidelityReseed(t))", 1)
		out += "\nfunc fidelityReseed(t *fidelityT) *fidelityT {\n\tfidelityRand, fidelitySeeds = rand.New(rand.NewSource(29)), 0\n\treturn t\n}\n"
	}
	return out, name, sites, random, nil
}

// usedPackages returns the import paths of the packages src names, sorted.
func usedPackages(src string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", "package p\n"+src, 0)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var missing error
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Obj != nil || seen[x.Name] {
			return true
		}
		// A name before a dot that does not resolve in the file is a
		// package's.
		if _, ok := stdPackages[x.Name]; ok {
			seen[x.Name] = true
		} else if missing == nil {
			missing = fmt.Errorf("%s.%s: no import path known for %s", x.Name, sel.Sel.Name, x.Name)
		}
		return true
	})
	if missing != nil {
		return nil, missing
	}
	var paths []string
	for name := range seen {
		paths = append(paths, stdPackages[name])
	}
	sort.Strings(paths)
	return paths, nil
}
