package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"adaptbot/cli"
)

// everyCommand is every command and subcommand a person can type.
func everyCommand() [][]string {
	cmds := [][]string{{"serve"}, {"config"}, {"route"}, {"report"},
		{"mcp"}, {"mcp", "validate"}, {"search"}, {"worker"}}
	for _, sub := range cli.ToolsSubcommands() {
		cmds = append(cmds, []string{"tools", sub})
	}
	for _, sub := range cli.UsersSubcommands() {
		cmds = append(cmds, []string{"users", sub})
	}
	for _, sub := range []string{"set", "list", "delete"} {
		cmds = append(cmds, []string{"secrets", sub})
	}
	return cmds
}

// seenFlagSet is what a command parsed its flags with.
type seenFlagSet struct {
	fs    *flag.FlagSet
	usage string
}

// TestUnknownFlagIsAUsageError: every command refuses a flag it does not
// know the one way: exit status 2, one line naming the flag, then the
// command's usage; nothing on standard output, nothing started or written,
// and never Go's own list of flags.
func TestUnknownFlagIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	copyTools(t, dir)
	env := cliEnv(dir, closedAddr(t))
	before := tree(t, dir)
	for _, cmd := range everyCommand() {
		args := append(append([]string{"adaptbot"}, cmd...), "--no-such-flag")
		var out, errOut bytes.Buffer
		err := runWith(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut, testHooks(nil))
		code := cli.ExitCode(err, &errOut)
		name := strings.Join(cmd, " ")
		first, rest, _ := strings.Cut(errOut.String(), "\n")
		if code != 2 {
			t.Errorf("%s --no-such-flag: exit status %d, want 2 (%v)", name, code, err)
		}
		if want := "adaptbot: " + name + ": unknown flag --no-such-flag"; first != want {
			t.Errorf("%s --no-such-flag: first line %q, want %q", name, first, want)
		}
		var help bytes.Buffer
		runWith(t.Context(), append(append([]string{"adaptbot"}, cmd...), "--help"), func(k string) string { return env[k] }, nil, &help, io.Discard, hooks{})
		if !strings.HasPrefix(help.String(), "Usage") || rest != "\n"+help.String() {
			t.Errorf("%s --no-such-flag: after the error, want a blank line and its --help:\n%s", name, errOut.String())
		}
		for _, raw := range []string{"flag provided but not defined", "Usage of ", "\t"} {
			if strings.Contains(errOut.String(), raw) {
				t.Errorf("%s --no-such-flag: Go's flag output (%q) in:\n%s", name, raw, errOut.String())
			}
		}
		if out.Len() > 0 {
			t.Errorf("%s --no-such-flag: printed %q on standard output", name, out.String())
		}
	}
	if after := tree(t, dir); !equalTrees(before, after) {
		t.Error("a refused command changed the folder")
	}
}

// TestUsageAndDocsNameEveryFlag: docs/cli.md's command block and the
// commands agree both ways. Each command and subcommand has a line there,
// and the block has a line for no command that does not exist; each
// command's --help and its line name every flag it takes, and its line
// names no flag it does not take. `adaptbot help` names every command and
// subcommand too.
func TestUsageAndDocsNameEveryFlag(t *testing.T) {
	seen := map[string]seenFlagSet{}
	h := testHooks(nil)
	h.flags = func(fs *flag.FlagSet, usage string) { seen[fs.Name()] = seenFlagSet{fs, usage} }
	env := cliEnv(t.TempDir(), closedAddr(t))
	for _, cmd := range everyCommand() {
		args := append(append([]string{"adaptbot"}, cmd...), "--no-such-flag")
		runWith(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, io.Discard, h)
	}
	block := cliDocBlock(t)
	exists := map[string]bool{}
	var top bytes.Buffer
	if err := runWith(t.Context(), []string{"adaptbot", "help"}, func(k string) string { return env[k] }, nil, &top, io.Discard, hooks{}); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range everyCommand() {
		name := strings.Join(cmd, " ")
		exists[name] = true
		if !strings.Contains(top.String(), "adaptbot "+name) && !(name == "serve" && strings.Contains(top.String(), "adaptbot [serve]")) &&
			!(cmd[0] == "users" && regexp.MustCompile(`adaptbot users [a-z|]*\b`+cmd[1]+`\b`).MatchString(top.String())) {
			t.Errorf("adaptbot help does not name adaptbot %s", name)
		}
		s, ok := seen[name]
		if !ok {
			t.Errorf("%s: parsed no flags through parseFlags", name)
			continue
		}
		// Its --help is the usage shown with a usage error.
		var help bytes.Buffer
		if err := runWith(t.Context(), append(append([]string{"adaptbot"}, cmd...), "--help"), func(k string) string { return env[k] }, nil, &help, io.Discard, hooks{}); err != nil {
			t.Fatal(err)
		}
		if help.String() != s.usage {
			t.Errorf("%s: --help and the usage shown on errors differ:\n%s\n---\n%s", name, help.String(), s.usage)
		}
		entry := block[name]
		if cmd[0] != "serve" && entry == "" {
			t.Errorf("docs/cli.md's command block has no line for adaptbot %s", name)
		}
		defined := map[string]bool{}
		s.fs.VisitAll(func(f *flag.Flag) {
			flagName := "--" + f.Name // as the usage writes it: -c, --name
			if len(f.Name) == 1 {
				flagName = "-" + f.Name
			}
			defined[flagName] = true
			if !hasFlag(s.usage, flagName) {
				t.Errorf("%s: --help does not mention %s", name, flagName)
			}
			if !hasFlag(entry, flagName) {
				t.Errorf("%s: docs/cli.md's command block does not mention %s", name, flagName)
			}
		})
		for _, m := range flagToken.FindAllStringSubmatch(entry, -1) {
			if !defined[m[2]] {
				t.Errorf("%s: docs/cli.md's command block names %s, which it does not take", name, m[2])
			}
		}
	}
	for name := range block {
		if !exists[name] {
			t.Errorf("docs/cli.md's command block documents adaptbot %s, which is no command", name)
		}
	}
}

var flagToken = regexp.MustCompile(`(^|[\s\[|])(--?[a-z][a-z-]*)`)

// hasFlag reports whether text names flag (-c, --name) as a word.
func hasFlag(text, flag string) bool {
	for _, m := range flagToken.FindAllStringSubmatch(text, -1) {
		if m[2] == flag {
			return true
		}
	}
	return false
}

// cliDocBlock is the first code block of docs/cli.md's "Command
// line" section, by command ("tools list", "route"): the lines that start
// with "adaptbot COMMAND" and those indented under them.
func cliDocBlock(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "# Command line\n")
	if !ok {
		t.Fatal("docs/cli.md has no Command line heading")
	}
	_, code, _ := strings.Cut(section, "```\n")
	code, _, _ = strings.Cut(code, "```")
	entries := map[string]string{}
	key := ""
	for _, line := range strings.Split(code, "\n") {
		if rest, ok := strings.CutPrefix(line, "adaptbot "); ok {
			f := strings.Fields(rest)
			key = strings.Trim(f[0], "[]") // adaptbot [serve]
			if key == "tools" || key == "users" || key == "secrets" || (key == "mcp" && len(f) > 1 && f[1] == "validate") {
				key += " " + f[1]
			}
		} else if !strings.HasPrefix(line, " ") {
			key = ""
		}
		if key != "" {
			entries[key] += line + "\n"
		}
	}
	return entries
}
