package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"adaptbot"
	"adaptbot/cli"
	"adaptbot/config"
	"adaptbot/homelock"
	"adaptbot/llm/llmtest"
	"adaptbot/poll"
)

// cliEnv is the environment of a command run over dir against the server
// at addr.
func cliEnv(dir, addr string) map[string]string {
	return map[string]string{
		"ADAPTBOT_ADDR":       addr,
		"ADAPTBOT_TOOLS_DIR":  filepath.Join(dir, "tools"),
		"ADAPTBOT_REGISTRY":   filepath.Join(dir, "tools_registry.json"),
		"ADAPTBOT_BENCHMARKS": filepath.Join(dir, "benchmarks", "benchmarks.csv"),
		"ADAPTBOT_USERS":      filepath.Join(dir, "users.json"),
		"ADAPTBOT_WORKERS":    "1",
	}
}

// runEnv runs one command of the binary with env, as a person would type
// it, and returns stdout and stderr together.
func runEnv(t *testing.T, env map[string]string, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runWith(t.Context(), append([]string{"adaptbot"}, args...), func(k string) string { return env[k] }, stdin, &out, &errOut, testHooks(nil))
	return out.String() + errOut.String(), err
}

// serverAddr is the host:port of a started instance.
func serverAddr(t *testing.T, in *instance) string {
	t.Helper()
	u, err := url.Parse(in.url)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCommandLineThroughServer: the commands that change tools go through a
// running server, which serves each change at once; the others read the
// files.
func TestCommandLineThroughServer(t *testing.T) {
	in := start(t, modelEnv(llmtest.New(t, romanScript(t))))
	writeTool(t, in.dir, "echo_tool", strings.Replace(echoTool, "%d", "2", 1))
	poll.Until(t, "echo_tool serves", func() bool {
		code, _ := in.do(t, "GET", "/api/tools/echo_tool", "")
		return code == 200
	})
	env := cliEnv(in.dir, serverAddr(t, in))
	env["ADAPTBOT_BENCHMARKS"] = in.env["ADAPTBOT_BENCHMARKS"]
	command := func(args ...string) (string, error) { return runEnv(t, env, strings.NewReader(""), args...) }

	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"tools", "run", "echo_tool", `{"text": "hi"}`}, "hihi\n", ""},
		{[]string{"tools", "run", "echo_tool", `{"text": "hi"}`, "--format", "json"}, `"output": "hihi"`, ""},
		{[]string{"tools", "run", "calculator", `{"expression": "2^8"}`}, "256", ""},
		{[]string{"tools", "run", "calculator", `{"expression": "1/0"}`}, "", "zero"},
		{[]string{"tools", "run", "nope"}, "", `no tool named "nope"`},
		{[]string{"tools", "create", "a tool that converts numbers to roman numerals"}, "roman_numerals", ""},
		{[]string{"tools", "run", "roman_numerals", `{"number": 2026}`}, "MMXXVI", ""},
		{[]string{"tools", "list"}, "echo_tool", ""},
		{[]string{"tools", "list", "--format", "json"}, `"name": "calculator"`, ""},
		{[]string{"tools", "list", "--format", "xml"}, "", "--format"},
		{[]string{"tools", "list", "--server", "local"}, "roman_numerals", ""},
		{[]string{"tools", "show", "echo_tool"}, "package echo_tool", ""},
		{[]string{"tools", "show", "echo_tool", "--format", "json"}, `"code": "// Package echo_tool`, ""},
		{[]string{"tools", "show", "nope"}, "", `no tool named "nope"`},
		{[]string{"tools", "history", "roman_numerals"}, "VERSION", ""},
		{[]string{"tools", "history", "roman_numerals", "--format", "json"}, `"version": 1`, ""},
		{[]string{"tools", "test", "roman_numerals"}, "2 of 2 examples pass", ""},
		{[]string{"tools", "test", "roman_numerals", "--format", "json"}, `"ok": true`, ""},
		{[]string{"tools", "test", "calculator"}, "", "no stored examples"},
		{[]string{"tools", "delete", "roman_numerals"}, "", "--yes"},
		{[]string{"tools", "delete", "roman_numerals", "--yes"}, "Deleted roman_numerals", ""},
		{[]string{"tools", "run", "roman_numerals", `{"number": 4}`}, "", `no tool named "roman_numerals"`},
		{[]string{"tools", "rollback", "roman_numerals", "1"}, "version 1 restored as version 2", ""},
		{[]string{"tools", "run", "roman_numerals", `{"number": 4}`}, "IV", ""},
		{[]string{"tools", "rollback", "roman_numerals", "x"}, "", "not a version number"},
		{[]string{"tools", "frobnicate"}, "", "unknown subcommand"},
		{[]string{"route", "--top-k", "2", "evaluate an arithmetic expression"}, "calculator", ""},
		{[]string{"report"}, "RUN", ""},
		{[]string{"report", "--format", "json"}, `"requests"`, ""},
		{[]string{"frobnicate"}, "", "unknown command"},
	}
	for _, tt := range tests {
		out, err := command(tt.args...)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v\n%s", tt.args, err, out)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: err = %v, want %q\n%s", tt.args, err, tt.wantErr, out)
		case !strings.Contains(out, tt.want):
			t.Errorf("%v: output does not contain %q:\n%s", tt.args, tt.want, out)
		}
	}
	// The server itself serves what the CLI changed, and wrote the rows.
	if code, r := in.do(t, "POST", "/api/tools/roman_numerals/run", `{"number": 9}`); code != 200 || r["output"] != "IX" {
		t.Errorf("the server after the CLI's rollback: %d %v", code, r)
	}
	runs, testRows := 0, 0
	for _, row := range in.rows(t) {
		if row["intent"] == "RUN" {
			runs++
		}
		if row["category"] == adaptbot.CategoryBuildTest {
			testRows++
		}
	}
	if runs < 5 {
		t.Errorf("%d RUN rows in the server's CSV, want the CLI's runs there", runs)
	}
	// tools test asks the running server, which writes a row for each run
	// of the examples, refusals included (it ran them itself before).
	if testRows != 3 {
		t.Errorf("%d build_test rows in the server's CSV, want 3: one per tools test", testRows)
	}
}

// TestBuildProgressLines: off a terminal, a build's progress is one line per
// event, on stderr; the result goes to stdout.
func TestBuildProgressLines(t *testing.T) {
	in := start(t, modelEnv(llmtest.New(t, romanScript(t))))
	env := cliEnv(in.dir, serverAddr(t, in))
	var out, errOut bytes.Buffer
	err := runWith(t.Context(), []string{"adaptbot", "tools", "create", "roman numerals"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut, testHooks(nil))
	if err != nil {
		t.Fatalf("create: %v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) < 3 || strings.Contains(errOut.String(), "\r") || !strings.HasPrefix(lines[len(lines)-1], "[done]") {
		t.Errorf("progress off a terminal:\n%q", errOut.String())
	}
	if !strings.Contains(out.String(), "roman_numerals") {
		t.Errorf("stdout = %q", out.String())
	}
}

// TestNoServer: a change without a server says how to start one, and
// changes nothing.
func TestNoServer(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, closedAddr(t))
	for _, args := range [][]string{
		{"tools", "run", "calculator", `{"expression": "1+1"}`},
		{"tools", "delete", "calculator", "--yes"},
		{"tools", "create", "a tool that flips coins"},
		{"tools", "rollback", "calculator", "1"},
		{"tools", "approve", "calculator"},
	} {
		_, err := runEnv(t, env, strings.NewReader(""), args...)
		if err == nil || !strings.Contains(err.Error(), "adaptbot serve") {
			t.Errorf("%v without a server: %v; want how to start it", args, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the folder holds %d entries, want only tools/", len(entries))
	}
}

// TestHelpDoesNothingElse: --help and -h print usage and succeed on every
// command and subcommand, and touch nothing: no file, no server, no CSV row.
func TestHelpDoesNothingElse(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, closedAddr(t))
	env["ADAPTBOT_BENCHMARKS"] = filepath.Join(dir, "benchmarks.csv")
	before := tree(t, dir)
	commands := [][]string{
		{}, {"serve"}, {"tools"}, {"route"}, {"report"}, {"config"}, {"mcp"}, {"mcp", "validate"}, {"search"},
		{"report", "some.csv"}, {"route", "some", "query"},
	}
	for _, sub := range cli.ToolsSubcommands() {
		commands = append(commands, []string{"tools", sub}, []string{"tools", sub, "some_tool", "1"})
	}
	for _, cmd := range commands {
		for _, help := range []string{"--help", "-h"} {
			args := append(append([]string(nil), cmd...), help)
			var out, errOut bytes.Buffer
			err := runWith(t.Context(), append([]string{"adaptbot"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut, hooks{})
			if err != nil || !strings.Contains(out.String(), "Usage") || errOut.Len() > 0 {
				t.Errorf("%v: err %v, stdout %q, stderr %q", args, err, out.String(), errOut.String())
			}
			if c := cli.ExitCode(err, io.Discard); c != 0 {
				t.Errorf("%v: exit status %d", args, c)
			}
		}
	}
	if after := tree(t, dir); !equalTrees(before, after) {
		t.Errorf("help changed the folder")
	}

	// The top-level help names every command and tools subcommand.
	out, _ := runEnv(t, env, nil, "--help")
	for _, want := range []string{"serve", "route", "report", "mcp", "search", "config"} {
		if !strings.Contains(out, " "+want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, sub := range cli.ToolsSubcommands() {
		if !strings.Contains(out, "adaptbot tools "+sub) {
			t.Errorf("help lacks tools %s", sub)
		}
	}
	// A usage error is exit status 2.
	_, err := runEnv(t, env, nil, "tools", "show")
	if c := cli.ExitCode(err, io.Discard); c != 2 {
		t.Errorf("tools show without a NAME: exit status %d, want 2", c)
	}
}

func TestConfigCommand(t *testing.T) {
	env := map[string]string{"ADAPTBOT_SHORTLIST": "7", "OPENAI_API_KEY": "sk-secret-value", "ADAPTBOT_ADMIN_TOKEN": "tok-secret"}
	out, err := runEnv(t, env, nil, "config")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 2 {
			lines[f[0]] = strings.Join(f[1:3], " ")
		}
	}
	for name, want := range map[string]string{
		"ADAPTBOT_SHORTLIST":    "7 environment",
		"ADAPTBOT_TOOL_TIMEOUT": "10s default",
		"OPENAI_API_KEY":        "(set) environment",
		"ANTHROPIC_API_KEY":     "(unset) default",
		"ADAPTBOT_ADMIN_TOKEN":  "(set) environment",
	} {
		if lines[name] != want {
			t.Errorf("%s: %q, want %q", name, lines[name], want)
		}
	}
	if strings.Contains(out, "sk-secret-value") || strings.Contains(out, "tok-secret") {
		t.Errorf("config prints a secret:\n%s", out)
	}
	out, err = runEnv(t, env, nil, "config", "--format", "json")
	var rows []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != len(config.JSON(config.Config{})) || strings.Contains(out, "sk-secret-value") || strings.Contains(out, "tok-secret") {
		t.Errorf("config --format json = %v\n%s", err, out)
	}
	// Bad values are listed and fail the command, after the table.
	out, err = runEnv(t, map[string]string{"ADAPTBOT_SHORTLIST": "many"}, nil, "config")
	if err == nil || !strings.Contains(err.Error(), `ADAPTBOT_SHORTLIST="many"`) || !strings.Contains(out, "ADAPTBOT_ADDR") {
		t.Errorf("config with a bad value: %v\n%s", err, out)
	}
}

// TestMCPHome: `adaptbot mcp` started elsewhere serves ADAPTBOT_HOME's tools
// and writes nothing where it was started, and leaves ADAPTBOT_HOME free
// when it ends (with no server running it holds it as its one writer:
// TestStdioMCPWithoutServerIsTheFoldersWriter); without ADAPTBOT_HOME, in
// a folder with no tools, it says so and fails.
func TestMCPHome(t *testing.T) {
	home := t.TempDir()
	copyTools(t, home)
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	// No server answers at its address: a server on the default one (a
	// developer's, app/newcomer's) would otherwise serve this mcp.
	env := map[string]string{"ADAPTBOT_WORKERS": "1", "ADAPTBOT_ADDR": closedAddr(t)}
	_, err := runEnv(t, env, strings.NewReader(""), "mcp")
	if err == nil || !strings.Contains(err.Error(), "ADAPTBOT_HOME") {
		t.Errorf("mcp in a folder with no tools: %v; want a word about ADAPTBOT_HOME", err)
	}

	env["ADAPTBOT_HOME"] = home
	env["ADAPTBOT_ADDR"] = closedAddr(t)
	pr, pw := io.Pipe()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runWith(t.Context(), []string{"adaptbot", "mcp"}, func(k string) string { return env[k] }, pr, &out, io.Discard, testHooks(nil))
	}()
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		io.WriteString(pw, msg+"\n")
	}
	poll.Until(t, "tools/list answered", func() bool { return strings.Contains(out.String(), `"id":2`) })
	pw.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mcp: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mcp did not end when its input did")
	}
	if !strings.Contains(out.String(), `"name":"calculator"`) {
		t.Errorf("tools/list does not list calculator:\n%s", out.String())
	}
	if _, held, _ := homelock.Read(home); held {
		t.Error("mcp still holds ADAPTBOT_HOME after it ended")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("mcp wrote %d entries where it was started", len(entries))
	}
}

// TestStartChatRunChangeNoTrackedFile: the repository's own tools and
// registry, served, chatted with and run, keep every byte.
func TestStartChatRunChangeNoTrackedFile(t *testing.T) {
	script := newScript(map[string]string{"what is 2+2?": "calculator"}, map[string]string{"what is 2+2?": `{"expression": "2+2"}`})
	in := start(t, modelEnv(llmtest.New(t, script.reply)), func(dir string) {
		os.RemoveAll(filepath.Join(dir, "tools"))
		copyTree(t, "../tools", filepath.Join(dir, "tools"))
		copyFile(t, "../tools_registry.json", filepath.Join(dir, "tools_registry.json"))
	})
	before := tree(t, in.dir)
	if code, r := in.chat(t, "what is 2+2?"); code != 200 || !strings.Contains(str(r["response"]), "4") {
		t.Errorf("chat = %d %v", code, r)
	}
	if code, r := in.do(t, "POST", "/api/tools/calculator/run", `{"expression": "3*3"}`); code != 200 || !strings.HasSuffix(str(r["output"]), "9") {
		t.Errorf("run = %d %v", code, r)
	}
	in.stop()
	after := tree(t, in.dir)
	for p, b := range before {
		// Ignored by git: history, the CSV, and the lock on the folder.
		if strings.Contains(p, ".history") || strings.Contains(p, "benchmarks") || filepath.Base(p) == homelock.FileName {
			continue
		}
		if !bytes.Equal(b, after[p]) {
			t.Errorf("%s changed", p)
		}
	}
	raw, _ := os.ReadFile("../tools_registry.json")
	if !bytes.Equal(raw, after[filepath.Join(in.dir, "tools_registry.json")]) {
		t.Error("the registry is not byte for byte the repository's")
	}
	for p := range after {
		if _, ok := before[p]; !ok && !strings.Contains(p, ".history") && !strings.Contains(p, "benchmarks") {
			t.Errorf("new file %s", p)
		}
	}
}

// tree returns every file under dir with its content.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[p], _ = os.ReadFile(p)
		}
		return nil
	})
	return files
}

func equalTrees(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		if y, ok := b[p]; !ok || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shoutSource is a tool that opts out of direct answers.
const shoutSource = `// Package shout says text louder.
package shout

import (
	"context"
	"strings"
)

// Direct is false: the answer is shown only as the model words it.
const Direct = false

// Input is what to shout.
type Input struct {
	Text string ` + "`json:\"text\" jsonschema:\"the text to shout\"`" + `
}

// Execute shouts.
func Execute(ctx context.Context, in Input) (string, error) { return strings.ToUpper(in.Text), nil }
`

// TestToolsShowJSONIsTheServersBody: `adaptbot tools show NAME --format
// json` prints every field of GET /api/tools/NAME, as the server sent it,
// tier and no_direct included; with no server it prints the same tool from
// the files, but for the tier, which only a running server knows.
func TestToolsShowJSONIsTheServersBody(t *testing.T) {
	in := start(t, nil, func(dir string) { writeTool(t, dir, "shout", shoutSource) })
	code, body := in.raw(t, "GET", "/api/tools/shout", "")
	if code != 200 {
		t.Fatalf("GET /api/tools/shout = %d %s", code, body)
	}
	var server map[string]any
	if err := json.Unmarshal(body, &server); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"tier", "no_direct", "code", "serving", "category", "sha256", "source"} {
		if _, ok := server[key]; !ok {
			t.Errorf("the server's body lacks %q: %s", key, body)
		}
	}
	out, err := runEnv(t, cliEnv(in.dir, serverAddr(t, in)), nil, "tools", "show", "shout", "--format", "json")
	if err != nil {
		t.Fatalf("tools show: %v\n%s", err, out)
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("tools show --format json: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(shown, server) {
		t.Errorf("tools show --format json\n%s\nwant the server's body\n%s", out, body)
	}

	// No server: the same tool, read from the files.
	in.stop()
	out, err = runEnv(t, cliEnv(in.dir, closedAddr(t)), nil, "tools", "show", "shout", "--format", "json")
	if err != nil {
		t.Fatalf("tools show without a server: %v\n%s", err, out)
	}
	var local map[string]any
	if err := json.Unmarshal([]byte(out), &local); err != nil {
		t.Fatalf("tools show without a server: %v\n%s", err, out)
	}
	delete(server, "tier")
	if !reflect.DeepEqual(local, server) {
		t.Errorf("tools show without a server\n%s\nwant what the server said, but the tier\n%s", out, body)
	}
}
