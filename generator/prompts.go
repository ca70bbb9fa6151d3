package generator

import (
	"encoding/json"
	"fmt"
	"strings"

	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/llm"
	"adaptbot/registry"
)

// Every prompt the generator sends is built in this file, and each is
// rendered for fixed inputs into testdata/golden (go test -update), so a
// change to what the model is told shows up in review.

// The functions the model answers through.
const (
	decideName    = "decide_build"
	writeToolName = "write_tool"
)

var decideFunction = llm.Function{
	Name:        decideName,
	Description: "Record what the build must do: create, modify or delete a tool.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"op":{"type":"string","enum":["CREATE","MODIFY","DELETE"]},` +
		`"tool":{"type":"string","description":"snake_case name: a new one for CREATE, an existing one for MODIFY and DELETE"},` +
		`"summary":{"type":"string","description":"one or two sentences: what the tool must do, what to change, or what goes"}},` +
		`"required":["op","tool","summary"]}`),
}

var writeToolFunction = llm.Function{
	Name:        writeToolName,
	Description: "Submit the tool: its complete Go source, a description, a category and examples that are run before it is saved.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"source":{"type":"string","description":"the complete Go file, plain text without Markdown fences"},` +
		`"description":{"type":"string","description":"one sentence: what the tool does"},` +
		`"category":{"type":"string","description":"an existing category if one fits, else a new short lowercase word"},` +
		`"examples":{"type":"array","minItems":2,"items":{"type":"object","properties":{` +
		`"input":{"type":"object","description":"the arguments: a JSON object of Input's fields"},` +
		`"contains":{"type":"string","description":"text the output must contain"},` +
		`"matches":{"type":"string","description":"an RE2 regular expression the output must match"},` +
		`"http":{"type":"array","description":"for a tool that sends requests: each request it sends on this input, in order, with the answer it gets; they stand in for the network","items":{"type":"object","properties":{` +
		`"request":{"type":"object","properties":{"method":{"type":"string"},"url":{"type":"string","description":"as the tool writes it, {{secret:NAME}} included"},"body":{"type":"string"}},"required":["url"]},` +
		`"response":{"type":"object","properties":{"status":{"type":"integer"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{"type":"string"}}}},` +
		`"required":["request","response"]}}},` +
		`"required":["input"]}}},` +
		`"required":["source","description","category","examples"]}`),
}

// decideMessages asks which operation a request is, given the tools there are.
func decideMessages(request string, tools []registry.Entry) []llm.Message {
	var b strings.Builder
	b.WriteString(`You manage the tools of AdaptBot, a chat assistant that writes its own tools in Go.
Decide what the user's request asks for, and answer by calling decide_build:
- CREATE: a new tool. A plain question that no tool can answer ("what is the weather in Paris", "convert 12 to roman numerals") is a CREATE too: of a generic tool that answers that kind of question (the weather for any city, any number in Roman numerals), never one hard-wired to the question.
- MODIFY: change one of the existing tools below ("make the currency tool also accept lowercase codes").
- DELETE: remove one of the existing tools below.

tool: for CREATE a new snake_case name that says what the tool does (roman_numerals, weather_forecast), not one of the existing names; for MODIFY and DELETE the exact name of the existing tool.
summary: for CREATE what the tool must do and the inputs it takes; for MODIFY the change; for DELETE which tool goes.

Existing tools:
`)
	if len(tools) == 0 {
		b.WriteString("(none)\n")
	}
	for _, t := range tools {
		cat := ""
		if t.Category != "" {
			cat = " [" + t.Category + "]"
		}
		fmt.Fprintf(&b, "- %s%s: %s\n", t.Name, cat, orNone(t.Description))
	}
	return []llm.Message{
		{Role: llm.System, Content: b.String()},
		{Role: llm.User, Content: request},
	}
}

// exampleTool is the complete tool shown to the model as the pattern to follow.
const exampleTool = `// Package word_stats counts the words, lines and characters of a text and
// finds its most frequent word. Words are split on spaces and punctuation,
// compared case-insensitively.
package word_stats

import (
	"context"
	"errors"
	"strings"
	"unicode"
)

// Input is the text to measure.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text to measure\"`" + `
	// MinLength is optional: a field with omitempty may be left out.
	MinLength int ` + "`json:\"min_length,omitempty\" jsonschema:\"only count words at least this long; default 1\"`" + `
}

// Stats is the result; a struct is returned to the caller as JSON.
type Stats struct {
	Words      int    ` + "`json:\"words\"`" + `
	Lines      int    ` + "`json:\"lines\"`" + `
	Characters int    ` + "`json:\"characters\"`" + `
	MostCommon string ` + "`json:\"most_common,omitempty\"`" + `
}

// Execute measures in.Text.
func Execute(ctx context.Context, in Input) (Stats, error) {
	if strings.TrimSpace(in.Text) == "" {
		return Stats{}, errors.New("text is empty: give the text to measure")
	}
	minLength := in.MinLength
	if minLength < 1 {
		minLength = 1
	}
	words := strings.FieldsFunc(strings.ToLower(in.Text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	counts := map[string]int{}
	stats := Stats{Lines: strings.Count(in.Text, "\n") + 1, Characters: len([]rune(in.Text))}
	for _, w := range words {
		if len([]rune(w)) < minLength {
			continue
		}
		stats.Words++
		counts[w]++
		if counts[w] > counts[stats.MostCommon] || (counts[w] == counts[stats.MostCommon] && w < stats.MostCommon) {
			stats.MostCommon = w
		}
	}
	return stats, nil
}
`

// exampleActingTool is the tool shown to the model as the pattern of one
// that acts: a declared host, a secret, a POST; exampleActingExample is its
// example, with the exchange that stands in for the network.
const exampleActingTool = `// Package post_message posts a message to the team's chat channel through
// its incoming webhook.
package post_message

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"adaptbot/toolkit"
)

// Hosts are the hosts the tool reaches: its requests go to no other.
const Hosts = "hooks.example.org"

// Input is the message to post.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the message to post\"`" + `
}

// Execute posts in.Text to the channel.
func Execute(ctx context.Context, in Input) (string, error) {
	if strings.TrimSpace(in.Text) == "" {
		return "", errors.New("text is empty: give the message to post")
	}
	// The webhook's address holds a secret: the server puts its value in.
	resp, err := toolkit.PostJSON(ctx, "https://hooks.example.org/services/{{secret:TEAM_HOOK}}", nil,
		map[string]string{"text": in.Text})
	if err != nil {
		return "", fmt.Errorf("posting the message: %w", err)
	}
	var out struct {
		OK bool ` + "`json:\"ok\"`" + `
	}
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || !out.OK {
		return "", fmt.Errorf("the channel did not take the message: %s", resp.Body)
	}
	return fmt.Sprintf("Posted %q to the channel.", in.Text), nil
}
`

const exampleActingExample = `{"input": {"text": "deploy done"}, "contains": "Posted", "http": [{"request": {"method": "POST", "url": "https://hooks.example.org/services/{{secret:TEAM_HOOK}}", "body": "{\"text\":\"deploy done\"}"}, "response": {"status": 200, "headers": {"Content-Type": "application/json"}, "body": "{\"ok\":true}"}}]}`

// writeSystem is the system prompt of every create, modify and repair call:
// the contract, the imports, the toolkit, the interpreter's Go and the answer
// format.
func writeSystem(categories []string) string {
	var b strings.Builder
	b.WriteString(`You write tools for AdaptBot, a chat assistant that extends itself. A tool is one Go source file that an interpreter (Yaegi) loads and calls with JSON arguments. Before a tool is saved it is parsed, checked against the contract below, compiled, and its examples are run; any failure comes back to you with the exact errors.

# The contract
- One file, ` + "`package <name>`" + `, where <name> is the tool name you are given.
- It starts with a package comment, ` + "`// Package <name> <does what>.`" + `: the tool's description, which decides when the tool is picked, so say what it does and what inputs it accepts.
- ` + "`type Input struct { ... }`" + ` holds the parameters. Give every exported field a json tag and a ` + "`jsonschema:\"...\"`" + ` tag that describes it (units, formats, examples). Use string, bool, int, float64, slices, maps with string keys and structs declared in the file. Fields without omitempty are required; make a field optional with ` + "`json:\"x,omitempty\"`" + ` when it has a sensible default.
- ` + "`func Execute(ctx context.Context, in Input) (T, error)`" + ` does the work. T is usually string (returned as is) or a struct (returned as JSON).
- Optionally ` + "`const Timeout = 5 * time.Second`" + ` lowers the tool's call limit.
- A string result is written for a person: when it alone answers the question (` + "`17 * 23 + 4 = 395`" + `), the chat shows it as it is, without asking the model to rephrase it. Make it a complete, readable sentence or line. Add ` + "`const Direct = false`" + ` only when the output is never fit to show a person as it is (raw data, IDs, internal codes) and must always be explained.
- Make the tool generic: take the specifics of the request (numbers, places, currencies) as Input fields, never hard-wire the question you were given.

A complete tool:
` + "```go\n" + exampleTool + "```\n" + `
# Typed results
When the result is a struct, name it Output, as Input names the parameters, and declare ` + "`func Execute(ctx context.Context, in Input) (Output, error)`" + `: the JSON schema of Output's fields becomes the tool's output schema, which clients read to use the result, and every example's result is checked against it. Give each field a json tag, and a comment where its name does not say it all. Only exported fields: the interpreter would write unexported ones into the result too.

# Allowed imports
Only these packages may be imported: ` + strings.Join(contract.AllowedImports(), ", ") + `.
Anything else is rejected before it runs: no os, os/exec, net, net/http, io/ioutil, syscall, unsafe, reflect or iter.

# Network
A tool has no network access except through package toolkit, imported as "` + contract.ToolkitPath + `":
- toolkit.Get(ctx context.Context, url string) (string, error): an HTTP GET that returns the body; it fails on a status outside 2xx, a body over 1 MiB, and private or loopback addresses.
- toolkit.GetJSON(ctx context.Context, url string, v any) error: a GET that decodes the JSON body into v.
- toolkit.QueryEscape(s string) string: escapes s for a URL query.
- toolkit.ErrBlocked is wrapped by the error for a destination the egress policy refuses.
Pass ctx along, and decode only the fields you need. The server sends every request for the tool.

# Requests that act, and secrets
To send a body, a method other than GET, or headers (post to a webhook, open an issue, add a calendar event, read an API behind a key):
- toolkit.Do(ctx context.Context, req toolkit.Request) (toolkit.Response, error), with toolkit.Request{Method, URL string; Header map[string]string; Body string} and toolkit.Response{Status int; Header map[string]string; Body string}: sends one request and returns the answer whatever its status, so check resp.Status yourself.
- toolkit.PostJSON(ctx context.Context, url string, header map[string]string, body any) (toolkit.Response, error): encodes body as JSON, POSTs it with Content-Type application/json, and fails on a status outside 2xx.
- A tool that sends anything but GET or HEAD, or uses a secret, declares every host it reaches: ` + "`const Hosts = \"api.example.com, hooks.example.org\"`" + ` (a host name matches any port). A request to another host is refused.
- A key, token or password is never an Input field and never written in the code. Write its placeholder {{secret:NAME}} in the URL's path or query, or in a header's value (` + "`\"Authorization\": \"Bearer {{secret:GITHUB_TOKEN}}\"`" + `): the server puts the value of the person asking in, only on its way to that secret's hosts, and masks it in the answer. Never put one in the body, the host or a header's name. NAME is a letter, then letters, digits and _, in upper case.
- Do not set Host, User-Agent, Content-Length, Transfer-Encoding, Connection or Proxy-* headers: the server sets them.
- Every request but GET and HEAD waits for the person asking to approve it. A denial comes back as an error that says nothing was sent: return it with what you were doing.
- The response body is text: decode JSON with encoding/json.

A complete tool that acts, with one of its examples:
` + "```go\n" + exampleActingTool + "```\n" + exampleActingExample + `

# Calling other tools
A tool may call the tools listed in the request, through the same package:
- toolkit.Call(ctx context.Context, name string, args any) (string, error): runs the tool name with args (a struct or a map[string]any, sent as its JSON arguments) and returns its output as text: what it returned as a string as is, anything else as JSON.
- toolkit.CallJSON(ctx context.Context, name string, args any, out any) error: the same, decoding a JSON output into out (a pointer to a struct with json tags).
Name the tool with a string literal, exactly as listed (toolkit.Call(ctx, "unit_converter", map[string]any{"value": 5, "from": "mi", "to": "km"})): a tool that names a tool that does not exist is refused. Give the arguments its schema asks for, pass ctx along, and return the error of a failed call with what you were doing (fmt.Errorf("converting: %w", err)). A tool may not call itself, nor a tool that calls it. Calls run one at a time and share the tool's time limit, so make as few as the job needs; a tool's output text is for people, so read the number or field you need from it carefully.

# The Go the interpreter runs
Yaegi runs Go as Go 1.22 means it, with a few gaps:
- min, max, clear, range over an integer (` + "`for i := range n`" + `) and per-iteration loop variables work as in Go 1.22; ranging over a string is fast;
- no range over a function (iterators): write a plain loop;
- slices offers Contains, ContainsFunc, Index, IndexFunc, Equal, Reverse, Max, Min, Sort, SortFunc, SortStableFunc, IsSorted, Clone, Compact and BinarySearch; maps offers Equal, Clone, Copy and DeleteFunc (no Keys, Values or All: range over the map); generic functions you declare yourself work when they take plain slice and map types;
- a three-clause loop whose body both changes the loop variable and captures it in a closure (or takes its address) is refused: capture a copy made in the body instead;
- declare one package-level variable per statement (` + "`var a, b = f()`" + ` fails); a package-level variable may not hold a generic function's result whose type depends on its type parameters (` + "`var m = maps.Clone(x)`" + `): set it in a function;
- everything stays in the one file; no init functions and no package-level variables whose initialisation does work; no goroutines are needed.

# Errors
Return errors, never panic: check indexes, map lookups, nil pointers, divisions by zero and every strconv error. An error message tells the user what was wrong with the input and what is accepted.

# Categories
`)
	if len(categories) == 0 {
		b.WriteString("There are no categories yet: choose a short lowercase word (finance, conversion, text, time, weather, math).\n")
	} else {
		b.WriteString("Existing categories: " + strings.Join(categories, ", ") + ". Use one if it fits, otherwise a new short lowercase word.\n")
	}
	b.WriteString(`
# Your answer
Call write_tool with:
- source: the complete Go file as plain text, without Markdown fences;
- description: one sentence on what the tool does;
- category: as above;
- examples: at least 2, each {"input": {...}, "contains": "..."} or {"input": {...}, "matches": "..."}. input is a JSON object of Input's fields; contains is text the output must contain, matches an RE2 regular expression it must match. Every example is run before the tool is saved, so pick inputs whose output you are sure of: the main use and an edge case, expecting a short, telling part of the output (a number, a key word), not all of it. For a struct result the output is its JSON encoding. For data from the network, expect its shape, not its value (matches "[0-9]").
- http, in each example of a tool that uses toolkit.Do or toolkit.PostJSON or declares Hosts: every request the tool sends on that input, in the order sent, each with the answer the real service gives: {"request": {"method", "url", "body"}, "response": {"status", "headers", "body"}}. Examples never reach the network: the tool's requests are answered from them, matched by method, URL (query in any order) and body (two JSON bodies match when they hold the same value), with each secret written as its placeholder, never a value. An example fails if the tool sends a request it does not list, or leaves a listed one out. An example whose input the tool refuses before sending anything lists none. A tool that only reads with toolkit.Get or GetJSON may list its exchanges too, which makes its examples independent of the network.
`)
	return b.String()
}

// createTask is the user message of a create.
func createTask(name, summary, request string, tools []callable, secrets []SecretInfo) string {
	return fmt.Sprintf(`Write the tool %q.
What it must do: %s
The user's request: %s`, name, summary, request) + callableSection(tools) + secretsSection(secrets)
}

// callableSection lists the tools the tool being written may call, each
// with its one-line description and its arguments' schema.
func callableSection(tools []callable) string {
	if len(tools) == 0 {
		return "\n\nTools you may call: none fits this request; write the tool on its own."
	}
	var b strings.Builder
	b.WriteString("\n\nTools you may call with toolkit.Call or toolkit.CallJSON, by these exact names. Where one does part of the job, call it rather than writing that part again:")
	for _, t := range tools {
		fmt.Fprintf(&b, "\n- %s: %s Arguments: %s", t.Name, sentenceEnd(contract.Summary(t.Description, 200)), compact(t.Parameters))
	}
	return b.String()
}

// modifyTask is the user message of a modify: the change and everything the
// tool is now.
func modifyTask(t registry.Tool, summary, request string, examples []byte, tools []callable, secrets []SecretInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, `Change the tool %q. Keep its name and keep everything it already does unless the change says otherwise. Its current examples are run again whether or not you send them: to change what one expects, because the change makes it wrong, send it again with the same input. Add at least one example for the change.
The change: %s
The user's request: %s
Current category: %s
Current source:
`+"```go\n%s```\n", t.Name, summary, request, orNone(t.Category), t.Code)
	if len(examples) > 0 {
		fmt.Fprintf(&b, "Current examples:\n%s", strings.TrimSpace(string(examples)))
	} else {
		b.WriteString("Current examples: (none)")
	}
	b.WriteString(callableSection(tools))
	b.WriteString(secretsSection(secrets))
	return b.String() + "\n"
}

// repairCasesTask is the user message of a repair from failure cases: the
// source, how it failed in real use, and the examples it must keep passing.
func repairCasesTask(t registry.Tool, cases []Case, examples []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, `Repair the tool %q. In real use it failed on the inputs below. Change it so that every one of them either gives the right result or makes Execute return an error that says clearly what is wrong with the input. It must never panic, loop, or run past its time or memory on them. Keep its name, its inputs and everything it already does: its current examples are run again as they are, and must still pass.
An input that "failed (error)" is one the tool refused with its own error message. A refusal may be the right answer (a division by zero, a date that does not exist): then keep it, with its clear message. But often it means the tool lacks a capability a person asked for: then make it give the right result. Judge each one.
Every failing input below is run against your version before it is saved. Add an example for each of them that should now give a result, with what its output must contain.
Current category: %s
Current source:
`+"```go\n%s```\n", t.Name, orNone(t.Category), t.Code)
	b.WriteString("\nFailing inputs:\n")
	for i, c := range cases {
		fmt.Fprintf(&b, "%d. input %s%s\n   ", i+1, clip.String(string(compact(c.Input)), maxCaseInput), caseLabel(c))
		if c.Kind == "feedback" {
			b.WriteString("ran, but a person said the answer was wrong")
			if c.Comment != "" {
				fmt.Fprintf(&b, ": %q", clip.String(c.Comment, 300))
			}
		} else {
			fmt.Fprintf(&b, "failed (%s): %s", c.Kind, clip.String(c.Error, 300))
		}
		if c.Count > 1 {
			fmt.Fprintf(&b, " (seen %d times)", c.Count)
		}
		b.WriteString("\n")
	}
	if hasPrivate(cases) {
		b.WriteString(privateNote + "\n")
	}
	if len(examples) > 0 {
		fmt.Fprintf(&b, "\nCurrent examples (they must still pass):\n%s\n", strings.TrimSpace(string(examples)))
	} else {
		b.WriteString("\nCurrent examples: (none)\n")
	}
	return b.String()
}

// repairTask follows the task with the failed attempt: its source as checked
// and the exact problems.
func repairTask(task string, attempt, of int, source string, problems []string, examples []Example) string {
	var b strings.Builder
	b.WriteString(task)
	fmt.Fprintf(&b, `

Attempt %d of %d failed its checks, and nothing was saved. Fix every problem below and call write_tool again with the complete corrected file and all the examples (change an example only if the example itself is wrong).

Problems:
`, attempt, of)
	for _, p := range problems {
		b.WriteString("- " + p + "\n")
	}
	if source != "" {
		b.WriteString("\nThe source as checked:\n```go\n" + strings.TrimRight(source, "\n") + "\n```\n")
	}
	if len(examples) > 0 {
		b.WriteString("\nThe examples as sent:\n")
		for _, e := range examples {
			b.WriteString("- " + jsonLine(e) + "\n")
		}
	}
	return b.String()
}

// jsonLine encodes v on one line, leaving <, > and & as they are.
func jsonLine(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // examples hold checked JSON
	return strings.TrimSpace(b.String())
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
