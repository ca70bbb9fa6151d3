package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"adaptbot/cli"
)

// badValue is a command line with a value that cannot be, what its one
// line of error must say, and the exit status it must end with.
type badValue struct {
	args []string
	want string
	code int
}

// runExit runs a command as a person types it and returns its exit status
// and what it wrote on standard error (ExitCode's words included).
func runExit(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runWith(t.Context(), append([]string{"adaptbot"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut, testHooks(nil))
	code := cli.ExitCode(err, &errOut)
	return code, errOut.String()
}

// libraryWords are what a library or Go says in its own terms, which must
// never be a person's message.
var libraryWords = []string{"invalid character", "validating root", "/properties/", "Go value", "Go struct", "cannot unmarshal",
	"parse error", "flag provided but not defined", "literal null", "open /", "no such file or directory: open"}

// checkBadValue runs tt and checks its exit status, its first line, the
// usage after it (for a status 2), and that no library's words are in it.
func checkBadValue(t *testing.T, env map[string]string, tt badValue) {
	t.Helper()
	code, stderr := runExit(t, env, tt.args...)
	for strings.HasPrefix(stderr, "warning: ") { // what the command read, before the error
		_, stderr, _ = strings.Cut(stderr, "\n")
	}
	first, rest, _ := strings.Cut(stderr, "\n")
	if code != tt.code {
		t.Errorf("%q: exit status %d, want %d\n%s", tt.args, code, tt.code, stderr)
	}
	if !strings.HasPrefix(first, "adaptbot: ") || !strings.Contains(first, tt.want) {
		t.Errorf("%q: first line %q, want one that says %q", tt.args, first, tt.want)
	}
	if tt.code == 2 && !strings.Contains(rest, "Usage") {
		t.Errorf("%q: a bad value, but no usage after the error:\n%s", tt.args, stderr)
	}
	for _, raw := range libraryWords {
		if strings.Contains(stderr, raw) {
			t.Errorf("%q: a library's own words (%q) in:\n%s", tt.args, raw, stderr)
		}
	}
}

// TestBadValuesExitTwo: every value a command line gives that cannot be
// (a malformed number, time, duration, JSON, name or choice, a word not
// among those allowed) exits with status 2, says what is wrong in the
// person's terms, and prints the command's usage, as docs/cli.md promises;
// a file that is not there is an error too (status 1), never an empty
// answer. None of them needs a server, and none changes the folder.
func TestBadValuesExitTwo(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, closedAddr(t))
	before := tree(t, dir)
	for _, tt := range []badValue{
		// tools
		{[]string{"tools", "run", "calculator", "nope"}, `JSON-ARGS "nope" is not valid JSON (it goes wrong at character 2)`, 2},
		{[]string{"tools", "run", "calculator", `{"expression": `}, "is not valid JSON", 2},
		{[]string{"tools", "run", "calculator", "[1]"}, "is not a JSON object", 2},
		{[]string{"tools", "run", "Calculator"}, `"Calculator" cannot name a tool`, 2},
		{[]string{"tools", "show", "Bad-Name"}, `"Bad-Name" cannot name a tool`, 2},
		{[]string{"tools", "history", "../x"}, `"../x" cannot name a tool`, 2},
		{[]string{"tools", "test", "a b"}, `"a b" cannot name a tool`, 2},
		{[]string{"tools", "delete", "X", "--yes"}, `"X" cannot name a tool`, 2},
		{[]string{"tools", "delete", "calculator"}, "add --yes", 2},
		{[]string{"tools", "approve", "-x"}, "unknown flag -x", 2},
		{[]string{"tools", "failures", "9"}, `"9" cannot name a tool`, 2},
		{[]string{"tools", "repair", "Nope"}, `"Nope" cannot name a tool`, 2},
		{[]string{"tools", "create", "  "}, "the REQUEST is empty", 2},
		{[]string{"tools", "modify", "calculator", ""}, "the REQUEST is empty", 2},
		{[]string{"tools", "rollback", "calculator", "0"}, `VERSION "0" is not a version number`, 2},
		{[]string{"tools", "rollback", "calculator", "two"}, `VERSION "two" is not a version number`, 2},
		{[]string{"tools", "export", "Calc", "--bundle", "x.tar.gz"}, `"Calc" cannot name a tool`, 2},
		{[]string{"tools", "export", "calculator"}, "give --out DIR or --bundle FILE", 2},
		{[]string{"tools", "import", "x.tar.gz", "--rename", "calc"}, `--rename: "calc" is not a valid value: want OLD=NEW`, 2},
		{[]string{"tools", "import", "x.tar.gz", "--rename", "a=b", "--rename", "a=c"}, "a is renamed twice", 2},
		{[]string{"tools", "list", "--format", "xml"}, "--format", 2},
		{[]string{"tools", "list", "--timeout", "soon"}, `--timeout: "soon" is not a valid value (want a duration such as 30s`, 2},
		{[]string{"tools", "list", "--server", "nowhere"}, `--server "nowhere" is not an MCP server`, 2},
		{[]string{"tools", "show", "calculator", "--format", "yaml"}, `--format must be text or json, not "yaml"`, 2},
		// users
		{[]string{"users", "add", "bob", "--role", "bogus"}, `--role: no role named "bogus": the roles are user, builder and admin`, 2},
		{[]string{"users", "add", "bob"}, "--role is required", 2},
		{[]string{"users", "add", "bob smith", "--role", "user"}, `the name "bob smith" may hold letters, digits`, 2},
		{[]string{"users", "role", "bob", "bogus"}, `no role named "bogus"`, 2},
		{[]string{"users", "remove", "bob"}, "add --yes", 2},
		{[]string{"users", "frobnicate"}, `unknown subcommand "frobnicate"`, 2},
		// report
		{[]string{"report", "--since", "yesterday"}, `"yesterday" is not a time`, 2},
		{[]string{"report", "--until", "-3h"}, "is not a time", 2},
		{[]string{"report", "--intent", "chatting"}, `intent "chatting" is not CHAT, BUILD, RUN, FEEDBACK, MANAGE or APPROVE`, 2},
		{[]string{"report", "--outcome", "meh"}, `outcome "meh" is not ok, error or not_configured`, 2},
		{[]string{"report", "--format", "yaml"}, `--format "yaml" is not text, md, json or csv`, 2},
		{[]string{"report", "a.csv", "b.csv"}, "one CSV at most", 2},
		{[]string{"report", filepath.Join(dir, "nowhere.csv")}, "there is no CSV " + filepath.Join(dir, "nowhere.csv"), 1},
		{[]string{"report"}, "there is no benchmarks CSV at " + env["ADAPTBOT_BENCHMARKS"] + " yet", 1},
		// search, route
		{[]string{"search", "get_(forecast"}, `bad regular expression "get_(forecast"`, 2},
		{[]string{"search", "--limit", "-1", "x"}, "--limit: want a number", 2},
		{[]string{"search", "--limit", "many", "x"}, `--limit: "many" is not a valid value (want a whole number)`, 2},
		{[]string{"search", "--sort", "size", "x"}, "--sort", 2},
		{[]string{"search"}, "what should it look for", 2},
		{[]string{"route", "--top-k", "0", "x"}, "--top-k must be positive", 2},
		{[]string{"route", "--mode", "best", "x"}, "--mode", 2},
		{[]string{"route", "--eval", "dir"}, "unknown flag --eval", 2},
		{[]string{"route", "--catalog", filepath.Join(dir, "none.json"), "x"}, "there is no such file", 1},
		// the others
		{[]string{"config", "--format", "yaml"}, `--format must be text or json, not "yaml"`, 2},
		{[]string{"config", "extra"}, "config takes no arguments", 2},
		{[]string{"mcp", "validate", "extra"}, "unexpected arguments", 2},
		{[]string{"mcp", "validate", "--timeout", "x"}, "--timeout", 2},
		{[]string{"mcp", "frobnicate"}, `unknown subcommand "frobnicate"`, 2},
		{[]string{"worker", "--nats"}, "--nats needs a value", 2},
		{[]string{"serve", "extra"}, "serve takes no arguments", 2},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, 2},
		{[]string{"tools", "import", filepath.Join(dir, "none.tar.gz")}, "there is no bundle " + filepath.Join(dir, "none.tar.gz"), 1},
	} {
		checkBadValue(t, env, tt)
	}
	if after := tree(t, dir); !equalTrees(before, after) {
		t.Error("a refused command changed the folder")
	}
}

// TestServerRefusalsExitTwo: a value only the server can judge (a tool's
// arguments against its schema, a failure case it does not keep) is a bad
// value all the same: status 2, the server's words, the usage. It leaves
// no failure case: the caller's mistake is not the tool's. A tool's own
// refusal of good arguments is the tool's answer: status 1.
func TestServerRefusalsExitTwo(t *testing.T) {
	in := start(t, nil)
	env := cliEnv(in.dir, serverAddr(t, in))
	for _, tt := range []badValue{
		{[]string{"tools", "run", "calculator", `{"expr": "1"}`}, `"expr" is not a parameter; the parameters are "expression"`, 2},
		{[]string{"tools", "run", "calculator", `{"expression": 5}`}, `"expression" must be text (a JSON string), not the number 5`, 2},
		{[]string{"tools", "run", "calculator"}, `"expression" is missing: it is required`, 2},
		{[]string{"tools", "run", "unit_converter", `{"value": "ten", "from": "m", "to": "km"}`}, `"value" must be a number, not the text "ten"`, 2},
		{[]string{"tools", "repair", "calculator", "nosuchcase"}, `calculator has no failure case "nosuchcase"`, 2},
		{[]string{"tools", "run", "calculator", `{"expression": "1/0"}`}, "division by zero", 1},
		{[]string{"tools", "show", "nope"}, `no tool named "nope"`, 1},
	} {
		checkBadValue(t, env, tt)
	}
	code, body := in.do(t, "GET", "/api/tools/calculator/failures", "")
	cases, _ := body["cases"].([]any)
	if code != 200 || len(cases) != 1 {
		raw, _ := json.Marshal(body)
		t.Errorf("calculator's failure cases: %d %s; want the division by zero's alone", code, raw)
	}
	// The rows say whose mistake each was.
	invalid := 0
	for _, row := range in.rows(t) {
		if row["intent"] == "RUN" && row["error_kind"] == "invalid" {
			invalid++
		}
	}
	if invalid != 4 {
		t.Errorf("%d RUN rows of kind invalid, want the four refused runs", invalid)
	}
}
