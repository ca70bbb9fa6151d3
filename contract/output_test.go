package contract

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// tool wraps the declarations decls in a tool's file.
func tool(imports, decls string) string {
	return "// Package t does things.\npackage t\n\nimport (\n\"context\"\n" + imports + ")\n\ntype Input struct{}\n\n" + decls
}

func TestParseOutput(t *testing.T) {
	src := tool("", `// Item is one part of the result.
type Item struct {
	Name string `+"`json:\"name\"`"+`
}

// Output is the result.
type Output struct {
	Count   int               `+"`json:\"count\" jsonschema:\"how many\"`"+`
	Ratio   float64           `+"`json:\"ratio,string\"`"+`
	Items   []Item            `+"`json:\"items\"`"+`
	Tags    map[string]string `+"`json:\"tags,omitempty\"`"+`
	Best    *Item             `+"`json:\"best\"`"+`
	Fixed   [2]int            `+"`json:\"fixed\"`"+`
	Skipped string            `+"`json:\"-\"`"+`
	hidden  int               `+"`json:\"-\"`"+`
}

func Execute(ctx context.Context, in Input) (Output, error) { return Output{}, nil }
`)
	spec, err := Parse("t", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"count":{"type":"integer","description":"how many"},` +
		`"ratio":{"type":"string"},` +
		`"items":{"type":["array","null"],"items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}},` +
		`"tags":{"type":["object","null"],"additionalProperties":{"type":"string"}},` +
		`"best":{"type":["object","null"],"properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},` +
		`"fixed":{"type":"array","items":{"type":"integer"}}},` +
		`"required":["count","ratio","items","best","fixed"],"additionalProperties":false}`
	if string(spec.Output) != want {
		t.Errorf("output schema:\n got %s\nwant %s", spec.Output, want)
	}
	// What encoding/json makes of a zero Output (nil slice, nil pointer)
	// and of a full one must both validate.
	for _, result := range []string{
		`{"count":0,"ratio":"0","items":null,"best":null,"fixed":[0,0]}`,
		`{"count":2,"ratio":"0.5","items":[{"name":"a"}],"tags":{"k":"v"},"best":{"name":"a"},"fixed":[1,2]}`,
	} {
		if err := ValidateResult(spec.Output, json.RawMessage(result)); err != nil {
			t.Errorf("ValidateResult(%s) = %v", result, err)
		}
	}
	if err := ValidateResult(spec.Output, json.RawMessage(`{"count":"many"}`)); err == nil || !strings.Contains(err.Error(), "count") {
		t.Errorf("ValidateResult of a wrong result = %v, want an error about count", err)
	}
}

func TestParseOutputOnlyForOutput(t *testing.T) {
	for _, result := range []string{"string", "Stats", "*Output", "[]int"} {
		src := tool("", "type Output struct{ N int }\ntype Stats struct{ N int }\n\nfunc Execute(ctx context.Context, in Input) ("+result+", error) { var v "+result+"; return v, nil }\n")
		spec, err := Parse("t", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", result, err)
		}
		if spec.Output != nil {
			t.Errorf("Execute returning %s: output schema %s, want none", result, spec.Output)
		}
	}
}

func TestParseOutputProblems(t *testing.T) {
	tests := []struct{ name, decls, want string }{
		{"not declared", "func Execute(ctx context.Context, in Input) (Output, error) { return nil, nil }", "`type Output struct { ... }` is not declared"},
		{"not a struct", "type Output []string\n\nfunc Execute(ctx context.Context, in Input) (Output, error) { return nil, nil }", "Output must be a struct type"},
		{"bad field", "type Output struct{ C chan int }\n\nfunc Execute(ctx context.Context, in Input) (Output, error) { return Output{}, nil }", "Output uses a type a JSON schema cannot describe"},
		{"unexported", "type Output struct{ N int; secret int }\n\nfunc Execute(ctx context.Context, in Input) (Output, error) { return Output{}, nil }", "Output's field secret is unexported"},
		{"unexported, nested", "type Part struct{ n int }\ntype Output struct{ P []Part }\n\nfunc Execute(ctx context.Context, in Input) (Output, error) { return Output{}, nil }", "Output's field n is unexported"},
		{"embedded", "type Base struct{}\ntype Output struct{ Base }\n\nfunc Execute(ctx context.Context, in Input) (Output, error) { return Output{}, nil }", "embedded fields are not supported in Output"},
	}
	for _, tt := range tests {
		_, err := Parse("t", []byte(tool("", tt.decls)))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestParseToolkitUses(t *testing.T) {
	src := tool(`kit "adaptbot/toolkit"
`, `const converter = "unit_converter"

func Execute(ctx context.Context, in Input) (string, error) {
	body, err := kit.Get(ctx, "https://example.com/?q="+kit.QueryEscape("x"))
	if err != nil {
		return "", err
	}
	var v struct{}
	if err := kit.CallJSON(ctx, "calculator", map[string]any{"expression": "1+1"}, &v); err != nil {
		return "", err
	}
	out, err := kit.Call(ctx, converter, nil)
	return body + out, err
}
`)
	spec, err := Parse("t", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !spec.Network {
		t.Error("Network = false for a tool that calls toolkit.Get")
	}
	if want := []string{"Call", "CallJSON", "Get", "QueryEscape"}; !reflect.DeepEqual(spec.Toolkit, want) {
		t.Errorf("Toolkit = %v, want %v", spec.Toolkit, want)
	}
	if want := []string{"calculator", "unit_converter"}; !reflect.DeepEqual(spec.Calls, want) {
		t.Errorf("Calls = %v, want %v", spec.Calls, want)
	}

	pure, err := Parse("t", []byte(tool("", "func Execute(ctx context.Context, in Input) (string, error) { return \"\", nil }")))
	if err != nil {
		t.Fatal(err)
	}
	if pure.Network || pure.Toolkit != nil || pure.Calls != nil {
		t.Errorf("a tool without toolkit: Network %v, Toolkit %v, Calls %v", pure.Network, pure.Toolkit, pure.Calls)
	}
}

func TestParseToolkitCallNames(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"variable name", `name := "calculator"
	return toolkit.Call(ctx, name, nil)`, "must name its tool with a string literal"},
		{"not a tool name", `return toolkit.Call(ctx, "../etc", nil)`, `"../etc" cannot name a tool`},
		{"as a value", `f := toolkit.Call
	return f(ctx, "calculator", nil)`, "may only be called, not used as a value"},
	}
	for _, tt := range tests {
		src := tool("\"adaptbot/toolkit\"\n", "func Execute(ctx context.Context, in Input) (string, error) {\n\t"+tt.body+"\n}\n")
		_, err := Parse("t", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
