// Package cli is AdaptBot's command line: every command but those that
// run the server's own wiring (serve, and the fleet worker), which app
// keeps. `adaptbot tools ...`, `users ...`, `secrets ...`, `route`,
// `report`, `mcp`, `search` and `config` are here. Commands that change tools or users are
// clients of the running server (package api), which alone writes tools/,
// the registry, the users and the CSV; the others only read: the registry
// opened read-only, the CSV, the MCP servers file. When no server runs,
// the users commands that change users, and `adaptbot mcp`, take the
// folder's lock (homelock) and are its one writer while they run: `mcp`
// then serves through the server's own wiring (Env.ServeMCP).
//
// Every command parses its flags one way and refuses a bad command line
// the one way: exit status 2, one line that says what is wrong, then the
// command's usage (flags.go). What a command needs of the server's wiring
// (a sandbox for `tools test`, the service for `mcp`) comes in Env: cli never
// imports app, and opens no server.
package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"adaptbot"
	"adaptbot/api"
	"adaptbot/config"
	"adaptbot/sandbox"
)

// Env is what a command gets from the program that runs it.
type Env struct {
	Config config.Config
	// Getenv reads the environment: the ${VAR}s of the MCP servers file
	// and the variables the servers it starts inherit.
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Sandbox starts the sandbox the configuration asks for, for the
	// commands that run tools themselves (tools test, mcp); they close it.
	Sandbox func(log *slog.Logger) (sandbox.Runner, error)
	// ServeMCP serves the folder's tools over Stdin and Stdout, through
	// the service as the server does (each call's row, trace and failure
	// cases), until the client leaves: `adaptbot mcp` with no server
	// running. The caller holds the folder's lock. Nil where the program
	// cannot (then `adaptbot mcp` needs a server).
	ServeMCP func(ctx context.Context) error
	// Flags, when set, sees each command's flag set and usage before it
	// parses, so a test can check that the usage and docs/cli.md name every
	// flag.
	Flags func(fs *flag.FlagSet, usage string)
}

// Help is the usage of cmd, or of the subcommand args start with, and
// whether cmd is one of cli's commands.
func Help(cmd string, args []string) (string, bool) {
	switch cmd {
	case "tools":
		return toolsHelp(args), true
	case "mcp":
		return mcpHelp(args), true
	}
	usage, ok := map[string]string{"report": reportUsage, "config": configUsage, "route": routeUsage,
		"search": searchUsage, "users": usersUsage, "secrets": secretsUsage}[cmd]
	return usage, ok
}

// Run runs the command cmd (one Help knows, but config: see Config) with
// its args. A value the server refuses as invalid (a tool's arguments that
// break its schema, a case ID it does not know) is a bad value of the
// command line like one the command refuses itself: exit status 2, with
// the command's usage.
func Run(ctx context.Context, cmd string, args []string, e Env) error {
	err := run(ctx, cmd, args, e)
	if se, ok := errors.AsType[*api.ServerError](err); ok && se.Status == http.StatusBadRequest {
		usage, _ := Help(cmd, args)
		return &ExitError{Code: 2, Err: err, Usage: usage}
	}
	return err
}

func run(ctx context.Context, cmd string, args []string, e Env) error {
	switch cmd {
	case "tools":
		return toolsCommand(ctx, e, args)
	case "route":
		return routeCommand(ctx, e, args)
	case "report":
		return reportCommand(e, args)
	case "mcp":
		return mcpCommand(ctx, e, args)
	case "search":
		return searchCommand(ctx, e, args)
	case "users":
		return usersCommand(ctx, e, args)
	case "secrets":
		return secretsCommand(ctx, e, args)
	}
	return UsageError("", "no command %q", cmd)
}

const configUsage = `Usage: adaptbot config [--format text|json]

Prints each setting's value in effect, where it came from (default or
environment) and what it means. Provider keys, the admin token, ADAPTBOT_KEY
and the OIDC client secret show as set or unset, never their values.
`

// Config is `adaptbot config`: the settings in effect, even when some are
// bad. loadErr is what config.Load found wrong; it is returned after the
// table, so the command fails for it.
func Config(e Env, args []string, loadErr error) error {
	fs := NewFlags("config")
	format := formatFlag(fs, "text", "text", "json")
	if err := e.Parse(fs, args, configUsage); err != nil {
		return err
	}
	if err := format.check(configUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError(configUsage, "config takes no arguments, got %q", fs.Args())
	}
	if format.value == "json" {
		return writeJSON(e.Stdout, config.JSON(e.Config))
	}
	if err := config.Write(e.Stdout, e.Config); err != nil {
		return err
	}
	return loadErr
}

// newClient is a client of the server at ADAPTBOT_ADDR that sends the
// caller's own key (ADAPTBOT_KEY), or else the admin token.
func newClient(cfg config.Config) *api.Client {
	token := cfg.Identity.Key
	if token == "" {
		token = cfg.AdminToken
	}
	return api.New(cfg.ServerURL(), token)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// confirm asks on a terminal before `cmd verb name` goes ahead, saying
// what follows; --yes (yes) skips the question, and without a terminal
// there is no one to ask, so --yes is required.
func confirm(stdin io.Reader, stderr io.Writer, yes bool, usage, cmd, verb, name, what string) error {
	if yes {
		return nil
	}
	if !isTerminal(stdin) {
		return UsageError(usage, "%s %s: add --yes to %s %s (standard input is not a terminal, so there is no one to ask)", cmd, verb, verb, name)
	}
	fmt.Fprintf(stderr, "%s%s %s? %s [y/N] ", strings.ToUpper(verb[:1]), verb[1:], name, what)
	answer, _ := bufio.NewReader(stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return fmt.Errorf("%s %s: %s not %sd (--yes %ss without asking)", cmd, verb, name, verb, verb)
	}
	return nil
}

// progressLine shows a build's progress: on one line, rewritten in place,
// on a terminal; one line per event anywhere else (a log, a pipe, CI).
type progressLine struct {
	w     io.Writer
	tty   bool
	width int
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w, tty: isTerminal(w)} }

func (p *progressLine) show(ev adaptbot.Event) {
	line := fmt.Sprintf("[%s] %s", ev.Stage, ev.Message)
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

func (p *progressLine) done() {
	if p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether v is a terminal: a file the kernel keeps
// terminal settings for (isTTY), not merely a character device such as
// /dev/null, where a prompt would go unanswered.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && isTTY(f.Fd())
}
