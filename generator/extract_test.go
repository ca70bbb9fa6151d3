package generator

import (
	"encoding/json"
	"strings"
	"testing"

	"adaptbot"
	"adaptbot/llm"
)

const tinyTool = `// Package echo repeats text.
package echo

import "context"

// Input is the text.
type Input struct {
	Text string ` + "`json:\"text\"`" + `
}

// Execute repeats in.Text.
func Execute(ctx context.Context, in Input) (string, error) {
	return in.Text, nil
}
`

func TestExtractSource(t *testing.T) {
	escaped, _ := json.Marshal(tinyTool) // "// Package echo…\n…" with literal \n
	tests := []struct {
		name, in, want string
	}{
		{"bare file", tinyTool, tinyTool},
		{"surrounding whitespace", "\n\n  " + tinyTool + "\n\n", tinyTool},
		{"fence with prose around", "Sure! Here is the tool:\n\n```go\n" + tinyTool + "```\n\nIt repeats the text you give it. Let me know if you need more.", tinyTool},
		{"golang fence", "```golang\n" + tinyTool + "```", tinyTool},
		{"fence without info", "```\n" + tinyTool + "```", tinyTool},
		{"unclosed fence (reply cut short)", "Here:\n```go\n" + tinyTool, tinyTool},
		{"fence opened mid-line", "Here it is: ```go\n" + tinyTool + "``` done.", tinyTool},
		{"json example fence before the code", "Call it like this:\n```json\n{\"text\": \"hi\"}\n```\nCode:\n```go\n" + tinyTool + "```", tinyTool},
		{"usage fence after the code", "```go\n" + tinyTool + "```\nUsage:\n```go\nout, _ := echo.Execute(ctx, echo.Input{Text: \"hi\"})\n```", tinyTool},
		{"escaped newlines", strings.Trim(string(escaped), `"`), tinyTool},
		{"escaped and quoted", string(escaped), tinyTool},
		{"escaped inside a fence", "```go\\n" + strings.Trim(string(escaped), `"`) + "\\n```", tinyTool},
		{"prose before and after, no fence", "I wrote this tool for you.\n\n" + tinyTool + "\nThis tool returns its input.\nHope it helps!", tinyTool},
		{"leading package main kept for the gate", strings.Replace(tinyTool, "package echo", "package main", 1), strings.Replace(tinyTool, "package echo", "package main", 1)},
		{"nothing", "   ", ""},
		{"prose only", "I cannot write that tool: it would need a file system.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := extractSource(tt.in); got != tt.want {
				t.Errorf("extractSource() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestParseReply(t *testing.T) {
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	wantExamples := []Example{{Input: json.RawMessage(`{"text":"hi"}`), Contains: "hi"}, {Input: json.RawMessage(`{"text":"3"}`), Matches: "^3$"}}
	tests := []struct {
		name         string
		resp         llm.Response
		wantExamples []Example
		wantProblem  string
	}{
		{
			name: "function call",
			resp: llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args(map[string]any{
				"source": tinyTool, "description": "Repeats text.", "category": "text",
				"examples": []any{map[string]any{"input": map[string]any{"text": "hi"}, "contains": "hi"}, map[string]any{"input": map[string]any{"text": "3"}, "matches": "^3$"}}})}}},
			wantExamples: wantExamples,
		},
		{
			name: "inputs and examples as JSON strings",
			resp: llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args(map[string]any{
				"source": tinyTool, "description": "Repeats text.", "category": "text",
				"examples": string(args([]any{map[string]any{"input": `{"text": "hi"}`, "contains": "hi"}, map[string]any{"input": `{"text":"3"}`, "matches": "^3$"}}))})}}},
			wantExamples: wantExamples,
		},
		{
			name: "number as expectation",
			resp: llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args(map[string]any{
				"source": tinyTool, "examples": []any{map[string]any{"input": map[string]any{"text": "3"}, "contains": 3}}})}}},
			wantExamples: []Example{{Input: json.RawMessage(`{"text":"3"}`), Contains: "3"}},
		},
		{
			name: "JSON in the content instead of a call",
			resp: llm.Response{Content: "Here you go:\n```json\n" + string(args(map[string]any{
				"source": tinyTool, "description": "Repeats text.", "category": "text",
				"examples": []any{map[string]any{"input": map[string]any{"text": "hi"}, "contains": "hi"}, map[string]any{"input": map[string]any{"text": "3"}, "matches": "^3$"}}})) + "\n```"},
			wantExamples: wantExamples,
		},
		{
			name:        "only code in the content",
			resp:        llm.Response{Content: "```go\n" + tinyTool + "```\nThe Input{} struct holds the text."},
			wantProblem: "no write_tool call",
		},
		{
			name: "raw line breaks inside the JSON strings",
			resp: llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: json.RawMessage(
				"{\"source\": \"" + strings.ReplaceAll(tinyTool, `"`, `\"`) + "\",\n\"examples\": [{\"input\": {\"text\": \"hi\"}, \"contains\": \"hi\"},\n\t{\"input\": {\"text\": \"3\"}, \"matches\": \"^3$\"}]}")}}},
			wantExamples: wantExamples,
		},
		{
			name: "http exchanges, bodies as JSON, status as text",
			resp: llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args(map[string]any{
				"source": tinyTool, "examples": []any{map[string]any{"input": map[string]any{"text": "hi"}, "contains": "hi", "http": []any{
					map[string]any{"request": map[string]any{"method": "post", "url": " https://api.example.com/x?k={{secret:K}} ", "body": map[string]any{"a": 1}},
						"response": map[string]any{"status": "201", "headers": map[string]any{"X-N": 2}, "body": []any{1, 2}}},
					map[string]any{"request": map[string]any{"url": "https://api.example.com/y"}, "response": map[string]any{}},
				}}}})}}},
			wantExamples: []Example{{Input: json.RawMessage(`{"text":"hi"}`), Contains: "hi", HTTP: []adaptbot.Exchange{
				{Request: adaptbot.ExchangeRequest{Method: "POST", URL: "https://api.example.com/x?k={{secret:K}}", Body: `{"a":1}`},
					Response: adaptbot.ExchangeResponse{Status: 201, Headers: map[string]string{"X-N": "2"}, Body: "[1,2]"}},
				{Request: adaptbot.ExchangeRequest{URL: "https://api.example.com/y"}},
			}}},
		},
		{
			name: "an exchange that is not one",
			resp: llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: args(map[string]any{
				"source": tinyTool, "examples": []any{map[string]any{"input": map[string]any{"text": "hi"}, "contains": "hi", "http": []any{
					map[string]any{"request": map[string]any{"url": "https://api.example.com/"}, "response": map[string]any{"status": "ok"}}}}}})}}},
			wantProblem: `example 1, http exchange 1: status "ok" is not a number`,
		},
		{
			name:        "arguments that are not JSON",
			resp:        llm.Response{Calls: []llm.FunctionCall{{Name: writeToolName, Arguments: json.RawMessage(`{"source": package echo}`)}}},
			wantProblem: "not valid JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseReply(tt.resp)
			if got := extractSource(c.Source); tt.wantProblem == "" && got != tinyTool {
				t.Errorf("source =\n%s\nwant\n%s", got, tinyTool)
			}
			if tt.wantProblem != "" {
				if !strings.Contains(strings.Join(c.Problems, "\n"), tt.wantProblem) {
					t.Errorf("problems = %q, want one about %q", c.Problems, tt.wantProblem)
				}
				return
			}
			if len(c.Problems) > 0 {
				t.Errorf("problems = %q, want none", c.Problems)
			}
			got, _ := json.Marshal(c.Examples)
			want, _ := json.Marshal(tt.wantExamples)
			if string(got) != string(want) {
				t.Errorf("examples = %s, want %s", got, want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name        string
		src, desc   string
		wantFixed   string // "" means no fix
		wantIn      []string
		wantProblem string
	}{
		{name: "already right", src: tinyTool, wantIn: []string{"// Package echo repeats text.\npackage echo\n"}},
		{name: "package main", src: strings.Replace(tinyTool, "package echo", "package main", 1), wantFixed: "renamed package main to echo", wantIn: []string{"\npackage echo\n"}},
		{
			name: "other name, comment follows", src: strings.NewReplacer("package echo", "package repeater", "// Package echo", "// Package repeater").Replace(tinyTool),
			wantFixed: "renamed package repeater", wantIn: []string{"// Package echo repeats text.\npackage echo\n"},
		},
		{
			name: "no package comment", src: strings.TrimPrefix(tinyTool, "// Package echo repeats text.\n"), desc: "Repeats the text it is given",
			wantFixed: "added the package comment", wantIn: []string{"// Package echo repeats the text it is given.\npackage echo\n"},
		},
		{name: "no package clause", src: strings.TrimPrefix(tinyTool, "// Package echo repeats text.\npackage echo\n"), wantFixed: "added the missing package clause", wantIn: []string{"package echo\n"}},
		{name: "gofmt", src: strings.Replace(tinyTool, "\treturn in.Text, nil", "return    in.Text,nil", 1), wantIn: []string{"\treturn in.Text, nil\n"}},
		{name: "syntax error", src: strings.Replace(tinyTool, "return in.Text, nil", "return in.Text, nil,", 1), wantProblem: "does not parse: 14:1: expected operand"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, fixed, problems := normalize("echo", tt.src, tt.desc)
			if tt.wantProblem != "" {
				if !strings.Contains(strings.Join(problems, "\n"), tt.wantProblem) {
					t.Fatalf("problems = %q, want %q", problems, tt.wantProblem)
				}
				return
			}
			if len(problems) > 0 {
				t.Fatalf("problems = %q", problems)
			}
			if got := strings.Join(fixed, "\n"); (tt.wantFixed == "") != (got == "") || !strings.Contains(got, tt.wantFixed) {
				t.Errorf("fixed = %q, want %q", fixed, tt.wantFixed)
			}
			for _, w := range tt.wantIn {
				if !strings.Contains(string(out), w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestInterpreterLint(t *testing.T) {
	body := func(code string) []byte {
		return []byte("package x\n\nfunc f(s []int) int {\n" + code + "\n}\n")
	}
	tests := []struct {
		name, code, want string
	}{
		{"max builtin works", "return max(1, len(s))", ""},
		{"clear builtin works", "m := map[int]int{}\nclear(m)\nreturn 0", ""},
		{"range over literal works", "n := 0\nfor i := range 10 {\nn += i\n}\nreturn n", ""},
		{"loop variable changed and captured", "var fs []func() int\nfor i := 0; i < 3; i++ {\nfs = append(fs, func() int { return i })\ni++\n}\nreturn len(fs)", "both changed in the loop body and captured"},
		{"range over func", "for v := range func(yield func(int) bool) {} {\n_ = v\n}\nreturn 0", "range over a function"},
		{"plain loop", "n := 0\nfor i := range s {\nn += i\n}\nreturn n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(interpreterLint("x", body(tt.code)), "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("lint = %q, want %q", got, tt.want)
			}
		})
	}
	// A helper the tool declares itself is fine.
	src := []byte("package x\n\nfunc max(a, b int) int {\nif a > b {\nreturn a\n}\nreturn b\n}\n\nfunc f() int { return max(1, 2) }\n")
	if got := interpreterLint("x", src); len(got) > 0 {
		t.Errorf("lint of a declared max = %q, want none", got)
	}
}

func TestToolName(t *testing.T) {
	tests := map[string]string{
		"roman_numerals":  "roman_numerals",
		"Roman Numerals":  "roman_numerals",
		"roman-numerals":  "roman_numerals",
		" weather/paris ": "weather_paris",
		"../../etc":       "etc",
		"2fa_codes":       "tool_2fa_codes",
		"":                "",
	}
	for in, want := range tests {
		if got := toolName(in); got != want {
			t.Errorf("toolName(%q) = %q, want %q", in, got, want)
		}
	}
}
