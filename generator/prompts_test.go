package generator

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/llm"
	"adaptbot/registry"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// render writes a prompt as a reviewer reads it: each message, then the
// function the model must call.
func render(msgs []llm.Message, fn llm.Function) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("=== " + string(m.Role) + " ===\n" + strings.TrimRight(m.Content, "\n") + "\n\n")
	}
	var schema any
	json.Unmarshal(fn.Parameters, &schema) //nolint:errcheck // checked by TestFunctionSchemasAreJSON
	params, _ := json.MarshalIndent(schema, "", "  ")
	b.WriteString("=== function " + fn.Name + " ===\n" + fn.Description + "\n" + string(params) + "\n")
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./generator -run TestPrompts -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("prompt %s changed; if that is intended, run go test ./generator -run TestPrompts -update and review the diff.\ngot:\n%s", name, got)
	}
}

func TestPrompts(t *testing.T) {
	tools := []registry.Entry{
		{Tool: adaptbot.Tool{Name: "calculator", Category: "math", Description: "Evaluates arithmetic expressions."}},
		{Tool: adaptbot.Tool{Name: "currency_converter", Category: "finance", Description: "Converts an amount of money between currencies."}},
		{Tool: adaptbot.Tool{Name: "notes"}},
	}
	current := registry.Tool{
		Entry: registry.Entry{Tool: adaptbot.Tool{Name: "roman_numerals", Category: "conversion", Version: 2}, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Code:  []byte(romanTool("roman_numerals")),
	}
	examples := []byte("[\n  " + exNumber + ",\n  " + exRoman + "\n]\n")
	system := writeSystem([]string{"conversion", "finance", "math"})
	callables := []callable{
		{Name: "calculator", Description: "Evaluates an arithmetic expression and returns it with its result. It knows + - * / % ^, parentheses and sqrt.",
			Parameters: json.RawMessage(`{"type": "object", "properties": {"expression": {"type": "string", "description": "the arithmetic expression"}}, "required": ["expression"]}`)},
		{Name: "files__read", Description: "Reads a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	}
	secrets := []SecretInfo{{Name: "CAL", Hosts: []string{"cal.example.com"}}, {Name: "TEAM_HOOK", Hosts: []string{"hooks.example.org", "hooks.example.net"}, Shared: true}}
	create := createTask("roman_numerals", "Convert integers to Roman numerals and back.", "convert 2024 to roman numerals", callables, nil)
	modify := modifyTask(current, "Accept numerals with spaces around them.", "make the roman tool ignore spaces", examples, callables[:1], nil)
	var ex []Example
	json.Unmarshal(examples, &ex) //nolint:errcheck // a constant
	repair := repairTask(create, 1, 3, compileError("roman_numerals"), []string{
		`compile error: roman_numerals.go:52:9: cannot use total (variable of type int) as string value in return statement`,
		`example 2 of 2 (input {"roman":"xiv"}): Execute panicked (return an error instead of panicking): runtime error: index out of range [13] with length 13`,
	}, ex)

	tests := []struct {
		name string
		msgs []llm.Message
		fn   llm.Function
	}{
		{"decide", decideMessages("convert 2024 to roman numerals", tools), decideFunction},
		{"decide_no_tools", decideMessages("make a tool that tells the weather", nil), decideFunction},
		{"create", []llm.Message{{Role: llm.System, Content: system}, {Role: llm.User, Content: create}}, writeToolFunction},
		{"create_no_categories", []llm.Message{{Role: llm.System, Content: writeSystem(nil)}, {Role: llm.User, Content: createTask("roman_numerals", "Convert integers to Roman numerals and back.", "convert 2024 to roman numerals", nil, nil)}}, writeToolFunction},
		{"create_with_secrets", []llm.Message{{Role: llm.System, Content: system}, {Role: llm.User, Content: createTask("add_event", "Add an event to the person's calendar on their CalDAV server.", "add lunch with Sam on Friday at noon to my calendar", nil, secrets)}}, writeToolFunction},
		{"plan", planMessages("post the release notes to our team channel", tools, secrets), planFunction},
		{"modify", []llm.Message{{Role: llm.System, Content: system}, {Role: llm.User, Content: modify}}, writeToolFunction},
		{"repair", []llm.Message{{Role: llm.System, Content: system}, {Role: llm.User, Content: repair}}, writeToolFunction},
		{"repair_cases", []llm.Message{{Role: llm.System, Content: system}, {Role: llm.User, Content: repairCasesTask(registry.Tool{
			Entry: registry.Entry{Tool: adaptbot.Tool{Name: "first_word", Category: "text"}}, Code: []byte(firstWord)},
			append(firstWordCases, Case{ID: "c3", Input: json.RawMessage(`{"text": "2 + 2"}`), Kind: "feedback", Comment: "it should skip numbers"}),
			[]byte("[\n  "+exHello+",\n  "+exOne+"\n]\n"))}}, writeToolFunction},
		{"repair_cases_private", []llm.Message{{Role: llm.User, Content: repairCasesTask(registry.Tool{
			Entry: registry.Entry{Tool: adaptbot.Tool{Name: "first_word", Category: "text"}}, Code: []byte(firstWord)},
			[]Case{{ID: "c4", Input: json.RawMessage(`{"text": "!mine"}`), Kind: "panic", Error: "no bangs", Private: true},
				{ID: "c5", Input: json.RawMessage(`{"text": "!theirs"}`), Kind: "panic", Error: "no bangs", Private: true, Recheck: true, Expect: "first: !theirs"}},
			[]byte("[\n  "+exHello+"\n]\n"))}}, writeToolFunction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, render(tt.msgs, tt.fn)) })
	}
}

func TestFunctionSchemasAreJSON(t *testing.T) {
	for _, fn := range []llm.Function{decideFunction, writeToolFunction, planFunction} {
		if !json.Valid(fn.Parameters) {
			t.Errorf("%s parameters are not valid JSON", fn.Name)
		}
	}
}

// TestWriteSystemStatesTheRules guards what the create prompt must say,
// whatever its wording becomes.
func TestWriteSystemStatesTheRules(t *testing.T) {
	p := writeSystem([]string{"finance"})
	for _, want := range []string{
		"func Execute(ctx context.Context, in Input) (T, error)", "type Input struct",
		`"adaptbot/toolkit"`, "toolkit.Get(", "toolkit.GetJSON(", "toolkit.QueryEscape(",
		"encoding/json, errors, fmt", "os/exec",
		"as Go 1.22 means it", "min, max, clear", "range over an integer", "per-iteration loop variables", "no range over a function", "one file", "no init functions", "no goroutines",
		"Return errors, never panic", "Existing categories: finance",
		"toolkit.Call(ctx context.Context, name string, args any) (string, error)", "toolkit.CallJSON(", "string literal", "may not call itself",
		"write_tool", "at least 2", `"contains"`, `"matches"`,
		"toolkit.Do(ctx context.Context, req toolkit.Request) (toolkit.Response, error)", "toolkit.Request{Method, URL string; Header map[string]string; Body string}",
		"toolkit.Response{Status int; Header map[string]string; Body string}", "toolkit.PostJSON(ctx context.Context, url string, header map[string]string, body any) (toolkit.Response, error)",
		"{{secret:NAME}}", "never an Input field", "Never put one in the body", `const Hosts = "api.example.com, hooks.example.org"`,
		"waits for the person asking to approve it", `"http"`, "never reach the network", "sends a request it does not list, or leaves a listed one out",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the write prompt does not say %q", want)
		}
	}
}

// TestActingExampleToolPassesTheGate keeps the tool that acts in the
// prompt honest too: with the example shown beside it and one more, it
// passes the gate, answered from the exchanges, and its secret and host
// are what the build reports.
func TestActingExampleToolPassesTheGate(t *testing.T) {
	f := newFixture(t, nil)
	examples, problems := decodeExamples(json.RawMessage("[" + exampleActingExample + "]"))
	if len(problems) > 0 || len(examples) != 1 || len(examples[0].HTTP) != 1 {
		t.Fatalf("the prompt's example does not decode: %q %+v", problems, examples)
	}
	second := Example{Input: json.RawMessage(`{"text":"rollback"}`), Contains: "Posted \"rollback\"", HTTP: []adaptbot.Exchange{{
		Request:  adaptbot.ExchangeRequest{Method: "POST", URL: "https://hooks.example.org/services/{{secret:TEAM_HOOK}}", Body: `{"text":"rollback"}`},
		Response: adaptbot.ExchangeResponse{Body: `{"ok":true}`},
	}}}
	c := candidate{Source: exampleActingTool, Examples: []Example{examples[0], second}}
	v, err := f.gen.gate(t.Context(), "post_message", c, func(Event) {})
	if err != nil || v.tool == nil {
		t.Fatalf("the acting example tool fails the gate: %q, %v", v.problems, err)
	}
	if len(v.fixed) != 0 {
		t.Errorf("the acting example tool needed fixes: %q", v.fixed)
	}
	if got := v.tool.spec.Hosts; !slices.Equal(got, []string{"hooks.example.org"}) {
		t.Errorf("hosts %q", got)
	}
	if got := neededSecrets(v.tool.spec.Secrets, v.tool.carried, v.tool.spec.Hosts); len(got) != 1 || got[0].Name != "TEAM_HOOK" || !slices.Equal(got[0].Hosts, []string{"hooks.example.org"}) {
		t.Errorf("needed secrets %+v", got)
	}
}

// TestExampleToolPassesTheGate keeps the tool the prompt shows honest: it
// must pass the very checks it teaches.
func TestExampleToolPassesTheGate(t *testing.T) {
	f := newFixture(t, nil)
	c := candidate{Source: exampleTool, Examples: []Example{
		{Input: json.RawMessage(`{"text": "The cat saw the dog.\nThe end."}`), Contains: `"most_common":"the"`},
		{Input: json.RawMessage(`{"text": "a bb ccc", "min_length": 2}`), Matches: `"words":2\b`},
	}}
	v, err := f.gen.gate(t.Context(), "word_stats", c, func(Event) {})
	if err != nil || v.tool == nil {
		t.Fatalf("the example tool fails the gate: %q, %v", v.problems, err)
	}
	if len(v.fixed) != 0 {
		t.Errorf("the example tool needed fixes: %q", v.fixed)
	}
}
