package contract

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// caller is a tool whose Execute holds body, importing the toolkit as
// alias (empty: as toolkit).
func caller(alias, body string) string {
	imp := `"adaptbot/toolkit"`
	if alias != "" {
		imp = alias + " " + imp
	}
	return `// Package trip calls tools.
package trip

import (
	"context"

	` + imp + `
)

const converter = "unit_converter"

type Input struct{}

func Execute(ctx context.Context, in Input) (string, error) {
` + body + `
	return "", nil
}
`
}

func TestCalls(t *testing.T) {
	tests := []struct {
		name, src string
		uses      []string
		problems  []string
	}{
		{"literals", caller("", `	toolkit.Call(ctx, "calculator", nil)
	toolkit.CallJSON(ctx, "text_stats", nil, nil)
	toolkit.Call(ctx, "calculator", map[string]any{"expression": "1+1"})`), []string{"calculator", "text_stats"}, nil},
		{"a constant", caller("", `	toolkit.Call(ctx, converter, nil)
	toolkit.Call(ctx, (converter), nil)`), []string{"unit_converter"}, nil},
		{"an external tool", caller("", `	toolkit.Call(ctx, "files__read", nil)
	toolkit.Call(ctx, "files/write", nil)`), []string{"files/write", "files__read"}, nil},
		{"an alias", caller("tk", `	tk.Call(ctx, "calculator", nil)`), []string{"calculator"}, nil},
		{"no calls", caller("", `	toolkit.Get(ctx, "https://example.com")`), []string{}, nil},
		{"a variable", caller("", `	name := "calculator"
	toolkit.Call(ctx, name, nil)`), []string{}, []string{"16:20: toolkit.Call must name its tool with a string literal"}},
		{"a concatenation", caller("", `	toolkit.CallJSON(ctx, "calc"+"ulator", nil, nil)`), []string{}, []string{"toolkit.CallJSON must name its tool with a string literal"}},
		{"a value", caller("", `	f := toolkit.Call
	f(ctx, "calculator", nil)`), []string{}, []string{"15:7: toolkit.Call may only be called, not used as a value"}},
		{"itself", caller("", `	toolkit.Call(ctx, "trip", nil)`), []string{}, []string{"trip calls trip itself: a tool may not call itself"}},
		{"not a name", caller("", `	toolkit.Call(ctx, "two words", nil)
	toolkit.Call(ctx, "", nil)`), []string{}, []string{`"two words" cannot name a tool`, `"" cannot name a tool`}},
		{"too few arguments", caller("", `	toolkit.Call(ctx)`), []string{}, []string{"toolkit.Call needs the tool's name as its second argument"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uses, err := Calls("trip", []byte(tt.src))
			if !slices.Equal(uses, tt.uses) && !(len(uses) == 0 && len(tt.uses) == 0) {
				t.Errorf("uses = %q, want %q", uses, tt.uses)
			}
			var ce *Error
			if len(tt.problems) == 0 {
				if err != nil {
					t.Errorf("err = %v", err)
				}
				return
			}
			if !errors.As(err, &ce) || len(ce.Problems) != len(tt.problems) {
				t.Fatalf("err = %v, want %d problems", err, len(tt.problems))
			}
			for i, want := range tt.problems {
				if !strings.Contains(ce.Problems[i], want) {
					t.Errorf("problem %q does not say %q", ce.Problems[i], want)
				}
			}
		})
	}
	if _, err := Calls("trip", []byte("package trip\nfunc (")); err == nil {
		t.Error("a source that does not parse has no error")
	}
}

func TestCallsOfTripTime(t *testing.T) {
	src, err := os.ReadFile("../testdata/tools/trip_time/trip_time.go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("trip_time", src); err != nil {
		t.Fatalf("trip_time breaks the contract: %v", err)
	}
	uses, err := Calls("trip_time", src)
	if err != nil || !slices.Equal(uses, []string{"calculator", "unit_converter"}) {
		t.Errorf("Calls(trip_time) = %q, %v", uses, err)
	}
}

func TestMissingCallees(t *testing.T) {
	src := caller("", `	toolkit.Call(ctx, "calculator", nil)
	toolkit.Call(ctx, "unit_converterr", nil)
	toolkit.Call(ctx, "unit_converterr", nil)`)
	got := MissingCallees("trip", []byte(src), func(tool string) bool { return tool == "calculator" })
	want := []string{`16:20: calls unit_converterr, and there is no tool named "unit_converterr"; call only the tools there are`}
	if !slices.Equal(got, want) {
		t.Errorf("MissingCallees = %q, want %q", got, want)
	}
	if got := MissingCallees("trip", []byte(src), func(string) bool { return true }); len(got) != 0 {
		t.Errorf("MissingCallees with every tool there = %q", got)
	}
}

// TestRenameCalls renames every name Calls reads, however it is written
// (a literal, in parentheses, a constant of the file or of a function,
// through an alias), and no other string.
func TestRenameCalls(t *testing.T) {
	src := caller("kit", `	const calc = "calculator"
	kit.Call(ctx, calc, nil)
	kit.CallJSON(ctx, ("calculator"), nil, nil)
	kit.Call(ctx, converter, "calculator")
	kit.Call(ctx, "weather", nil)`)
	got, err := RenameCalls("trip", []byte(src), map[string]string{"calculator": "calc", "unit_converter": "units"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(`calc = "calculator"`, `calc = "calc"`, `("calculator")`, `("calc")`,
		`converter = "unit_converter"`, `converter = "units"`).Replace(src)
	if string(got) != want {
		t.Errorf("RenameCalls =\n%s\nwant\n%s", got, want)
	}
	uses, err := Calls("trip", got)
	if err != nil || !slices.Equal(uses, []string{"calc", "units", "weather"}) {
		t.Errorf("Calls after the rename = %q, %v", uses, err)
	}
}
