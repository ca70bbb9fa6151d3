package generator

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/llm/llmtest"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/toolbox"
)

// script is a model that gives replies in order, one per call, and keeps
// the requests it was sent.
type script struct {
	t       *testing.T
	mu      sync.Mutex
	replies []llm.Response
	sent    []llm.Request
}

func scripted(t *testing.T, replies ...llm.Response) (*llmtest.Fake, *script) {
	s := &script{t: t, replies: replies}
	return &llmtest.Fake{GenerateFunc: func(_ context.Context, r llm.Request) (llm.Response, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sent = append(s.sent, r)
		if len(s.replies) == 0 {
			s.t.Errorf("model called %d times, more than scripted; last request forced %q", len(s.sent), r.Force)
			return llm.Response{}, errors.New("unscripted call")
		}
		resp := s.replies[0]
		s.replies = s.replies[1:]
		return resp, nil
	}}, s
}

func (s *script) requests() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.sent...)
}

// lastUser is the user message of request i.
func (s *script) lastUser(i int) string {
	reqs := s.requests()
	if i >= len(reqs) {
		s.t.Fatalf("request %d was never sent (%d were)", i, len(reqs))
	}
	msgs := reqs[i].Messages
	return msgs[len(msgs)-1].Content
}

func decideReply(op, tool, summary string) llm.Response {
	args, _ := json.Marshal(map[string]string{"op": op, "tool": tool, "summary": summary})
	return llm.Response{Calls: []llm.FunctionCall{{Name: decideName, Arguments: args}}}
}

// writeReply is a write_tool call, as models that use tools send it.
func writeReply(source, category string, examples ...string) llm.Response {
	var ex []json.RawMessage
	for _, e := range examples {
		ex = append(ex, json.RawMessage(e))
	}
	args, err := json.Marshal(map[string]any{"source": source, "description": "Converts between integers and Roman numerals.", "category": category, "examples": ex})
	if err != nil {
		panic(err)
	}
	return llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args}}}
}

// The examples the roman tool comes with.
const (
	exNumber = `{"input": {"number": 2024}, "contains": "MMXXIV"}`
	exRoman  = `{"input": {"roman": "xiv"}, "matches": "= 14$"}`
)

// romanTool is a correct tool, as a model would write it; name sets its
// package.
func romanTool(name string) string {
	return strings.ReplaceAll(`// Package roman_numerals converts integers to Roman numerals and back.
package roman_numerals

import (
	"context"
	"fmt"
	"strings"
)

// Input holds the value to convert: a number or a numeral.
type Input struct {
	Number int    `+"`json:\"number,omitempty\" jsonschema:\"an integer from 1 to 3999 to write in Roman numerals\"`"+`
	Roman  string `+"`json:\"roman,omitempty\" jsonschema:\"a Roman numeral to read, e.g. XIV\"`"+`
}

var values = []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}

var symbols = []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}

// Execute writes in.Number in Roman numerals, or reads in.Roman.
func Execute(ctx context.Context, in Input) (string, error) {
	if in.Roman != "" {
		return fromRoman(strings.ToUpper(in.Roman))
	}
	if in.Number < 1 || in.Number > 3999 {
		return "", fmt.Errorf("number %d is out of range: give 1 to 3999", in.Number)
	}
	var b strings.Builder
	n := in.Number
	for i := 0; i < len(values); i++ {
		for n >= values[i] {
			b.WriteString(symbols[i])
			n -= values[i]
		}
	}
	return fmt.Sprintf("%d = %s", in.Number, b.String()), nil
}

func fromRoman(s string) (string, error) {
	total := 0
	rest := s
	for i := 0; i < len(values); i++ {
		for strings.HasPrefix(rest, symbols[i]) {
			total += values[i]
			rest = rest[len(symbols[i]):]
		}
	}
	if rest != "" || total == 0 {
		return "", fmt.Errorf("%q is not a Roman numeral", s)
	}
	return fmt.Sprintf("%s = %d", s, total), nil
}
`, "roman_numerals", name)
}

// Broken versions of romanTool, each as a model gets it wrong.
func missingImport(name string) string {
	return strings.Replace(romanTool(name), "\t\"strings\"\n", "", 1)
}

func forbiddenImport(name string) string {
	return strings.NewReplacer("\t\"fmt\"\n", "\t\"fmt\"\n\t\"os/exec\"\n",
		"\tvar b strings.Builder\n", "\t_ = exec.Command\n\tvar b strings.Builder\n").Replace(romanTool(name))
}

func compileError(name string) string {
	return strings.Replace(romanTool(name), `return fmt.Sprintf("%s = %d", s, total), nil`, `return total, nil`, 1)
}

func panicking(name string) string {
	return strings.Replace(romanTool(name), "for i := 0; i < len(values); i++ {\n\t\tfor n >= values[i]", "for i := 0; i <= len(values); i++ {\n\t\tfor n >= values[i]", 1)
}

func lowercase(name string) string {
	return strings.Replace(romanTool(name), "b.String()), nil", "strings.ToLower(b.String())), nil", 1)
}

// fixture is a generator over a real registry in a temporary folder, the
// real in-process sandbox and the toolbox of the registry's tools.
type fixture struct {
	gen    *Generator
	reg    *registry.Registry
	runner sandbox.Runner
	box    *toolbox.Set
	tools  string
}

// fixtureOption changes the fixture's Options or its registry's.
type fixtureOption func(*Options, *registry.Options)

func newFixture(t *testing.T, model llm.Model, options ...fixtureOption) *fixture {
	t.Helper()
	dir := t.TempDir()
	runner := newRunner(t)
	ropts := registry.Options{ToolsDir: filepath.Join(dir, "tools"), Path: filepath.Join(dir, "tools_registry.json"), Compiler: runner}
	opts := Options{Runner: runner, ExampleTimeout: 2 * time.Second}
	for _, o := range options {
		o(&opts, &ropts)
	}
	runner = opts.Runner
	reg, err := registry.Open(t.Context(), ropts)
	if err != nil {
		t.Fatal(err)
	}
	box := toolbox.New(reg, runner)
	opts.Registry, opts.Tools = reg, box
	if model != nil {
		opts.Model = model
	}
	gen, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{gen: gen, reg: reg, runner: runner, box: box, tools: filepath.Join(dir, "tools")}
}

// newRunner is the real in-process sandbox, so compile errors and panics
// come from the interpreter itself.
func newRunner(t testing.TB) sandbox.Runner {
	t.Helper()
	r, err := sandbox.New(sandbox.Options{Mode: sandbox.ModeInProcess, CallTimeout: 2 * time.Second, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// put registers a tool as if built earlier, with the roman examples.
func (f *fixture) put(t *testing.T, name, src, category string) registry.Entry {
	t.Helper()
	e, err := f.reg.Put(t.Context(), name, []byte(src), registry.PutOptions{Origin: adaptbot.OriginGenerated, Category: category,
		Examples: []byte("[" + exNumber + "," + exRoman + "]")})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// assertNothingWritten checks that a refused build left no trace of name.
func (f *fixture) assertNothingWritten(t *testing.T, name string) {
	t.Helper()
	if _, ok := f.reg.Entry(name); ok {
		t.Errorf("%s is in the registry", name)
	}
	if _, err := os.Stat(filepath.Join(f.tools, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tools/%s exists (err %v)", name, err)
	}
	if _, err := os.Stat(filepath.Join(f.tools, ".history", name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("history of %s exists (err %v)", name, err)
	}
}

// stages collects the stages of a build's events, safely.
type stages struct {
	mu     sync.Mutex
	events []Event
}

func (s *stages) add(ev Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
}

func (s *stages) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.events {
		out = append(out, ev.Stage)
	}
	return out
}
