package contract

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const good = `// Package currency_converter converts an amount of money between currencies.
package currency_converter

import (
	"context"
	"time"
)

// Category is the tool's domain.
const Category = "finance"

// Timeout is the tool's own limit.
const Timeout = 2 * time.Second

// Rate is a nested type.
type Rate struct {
	Code  string  ` + "`json:\"code\"`" + `
	Value float64 ` + "`json:\"value\"`" + `
}

// Input holds the parameters.
type Input struct {
	Amount   float64           ` + "`json:\"amount\" jsonschema:\"amount of money to convert\"`" + `
	From     string            ` + "`json:\"from\" jsonschema:\"ISO 4217 code of the source currency, e.g. USD\"`" + `
	To       string            ` + "`json:\"to,omitempty\" jsonschema:\"description=target currency\"`" + `
	Places   *int              ` + "`json:\"places\"`" + `
	Rates    []Rate            ` + "`json:\"rates,omitempty\"`" + `
	Tags     map[string]string ` + "`json:\"tags,omitempty\"`" + `
	Ignored  string            ` + "`json:\"-\"`" + `
	internal int
}

// Execute runs the tool.
func Execute(ctx context.Context, in Input) (string, error) { return "", nil }
`

func TestParseGood(t *testing.T) {
	spec, err := Parse("currency_converter", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spec.Description, "Converts an amount of money between currencies."; got != want {
		t.Errorf("description = %q, want %q", got, want)
	}
	if spec.Category != "finance" || spec.Timeout != 2*time.Second {
		t.Errorf("category, timeout = %q, %v", spec.Category, spec.Timeout)
	}
	want := `{"type":"object","properties":{` +
		`"amount":{"type":"number","description":"amount of money to convert"},` +
		`"from":{"type":"string","description":"ISO 4217 code of the source currency, e.g. USD"},` +
		`"to":{"type":"string","description":"target currency"},` +
		`"places":{"type":"integer"},` +
		`"rates":{"type":"array","items":{"type":"object","properties":{"code":{"type":"string"},"value":{"type":"number"}},"required":["code","value"],"additionalProperties":false}},` +
		`"tags":{"type":"object","additionalProperties":{"type":"string"}}},` +
		`"required":["amount","from"],"additionalProperties":false}`
	if string(spec.Parameters) != want {
		t.Errorf("schema:\n got %s\nwant %s", spec.Parameters, want)
	}
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name, tool, src string
		want            []string
	}{
		{"bad name", "../x", "package x", []string{"invalid tool name"}},
		{"does not parse", "t", "package t\nfunc (", []string{"does not parse"}},
		{"wrong package", "t", "// Package u does.\npackage u\nimport \"context\"\ntype Input struct{}\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }", []string{`package is "u", must be "t"`}},
		{"no comment, no input, no execute", "t", "package t", []string{"missing package comment", "missing `type Input", "missing `func Execute"}},
		{"forbidden imports", "t", "// Package t does.\npackage t\nimport (\n\"context\"\n\"os/exec\"\n_ \"unsafe\"\n)\ntype Input struct{}\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }", []string{`import "os/exec" is not allowed`, `import "unsafe" is not allowed`, "dot and blank imports"}},
		{"bad signature", "t", "// Package t does.\npackage t\nimport \"context\"\ntype Input struct{}\nfunc Execute(in Input) string { return \"\" }", []string{"takes 1 parameters", "must return a value and an error"}},
		{"wrong param types", "t", "// Package t does.\npackage t\nimport \"context\"\ntype Input struct{}\nfunc Execute(ctx string, in int) (string, error) { return \"\", nil }", []string{"first parameter of Execute must be context.Context", "second parameter of Execute must be Input"}},
		{"input not a struct", "t", "// Package t does.\npackage t\nimport \"context\"\ntype Input string\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }", []string{"Input must be a struct"}},
		{"unsupported field", "t", "// Package t does.\npackage t\nimport (\"context\"; \"time\")\ntype Input struct{ When time.Time }\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }", []string{"cannot describe"}},
		{"bad timeout", "t", "// Package t does.\npackage t\nimport \"context\"\nconst Timeout = \"soon\"\ntype Input struct{}\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }", []string{"Timeout must be a positive duration"}},
		{"bad direct", "t", "// Package t does.\npackage t\nimport \"context\"\nconst Direct = 0\ntype Input struct{}\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }", []string{"Direct must be true or false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.tool, []byte(tt.src))
			if err == nil {
				t.Fatal("Parse accepted a source that breaks the contract")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseReportsEveryProblemAtOnce(t *testing.T) {
	_, err := Parse("t", []byte("package t\nimport \"os\""))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if len(ce.Problems) < 4 {
		t.Errorf("problems = %q, want comment, import, Input and Execute", ce.Problems)
	}
}

func TestValidate(t *testing.T) {
	spec, err := Parse("currency_converter", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args string
		want string // "" means valid
	}{
		{`{"amount": 10, "from": "USD", "places": 2}`, ""},
		{`{"amount": 10.5, "from": "USD", "to": "EUR"}`, ""},
		{`{"from": "USD"}`, "amount"},
		{`{"amount": "ten", "from": "USD"}`, "amount"},
		{`{"amount": 1, "from": "USD", "extra": true}`, "extra"},
		{`{"amount": 1, "from": "USD", "places": 1.5}`, "places"},
		{`[1]`, "must be a JSON object"},
		{`{"amount": `, "not valid JSON"},
	}
	for _, tt := range tests {
		err := Validate(spec.Parameters, json.RawMessage(tt.args))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Validate(%s) = %v, want nil", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Validate(%s) = %v, want an error about %q", tt.args, err, tt.want)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"a", "calculator", "unit_converter2", strings.Repeat("a", 63)} {
		if ValidName(n) != nil {
			t.Errorf("ValidName(%q) rejected a good name", n)
		}
	}
	for _, n := range []string{"", "A", "1a", "a-b", "a/b", "..", "a.b", strings.Repeat("a", 64), "_a"} {
		if ValidName(n) == nil {
			t.Errorf("ValidName(%q) accepted a bad name", n)
		}
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		desc string
		max  int
		want string
	}{
		{"Adds numbers. Also subtracts.", 160, "Adds numbers."},
		{"Short", 160, "Short"},
		{"one two three four five six", 12, "one two…"},
		{"  spaced\n  out  text ", 160, "spaced out text"},
		{"日本語のテキストです", 4, "日本語の…"},
	}
	for _, tt := range tests {
		if got := Summary(tt.desc, tt.max); got != tt.want {
			t.Errorf("Summary(%q, %d) = %q, want %q", tt.desc, tt.max, got, tt.want)
		}
	}
}

// TestDirectOptOut checks that `const Direct = false` opts a tool out of
// direct answers, and that without it, or with true, the tool is in.
func TestDirectOptOut(t *testing.T) {
	for decl, want := range map[string]bool{"": false, "const Direct = true\n": false, "const Direct = false\n": true, "const (\n\tCategory = \"x\"\n\tDirect = false\n)\n": true} {
		src := "// Package t does.\npackage t\nimport \"context\"\n" + decl + "type Input struct{}\nfunc Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }"
		spec, err := Parse("t", []byte(src))
		if err != nil {
			t.Fatalf("%q: %v", decl, err)
		}
		if spec.NoDirect != want {
			t.Errorf("%q: NoDirect = %v, want %v", decl, spec.NoDirect, want)
		}
	}
}
