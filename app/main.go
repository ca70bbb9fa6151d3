// Command adaptbot is AdaptBot: a chat server that builds its own tools.
//
//	go run ./app                 # serve the chat page on ADAPTBOT_ADDR
//	go run ./app tools list      # and the other commands: see `help`
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	// Tools call time.LoadLocation; embed the zone database so they work on
	// hosts without /usr/share/zoneinfo (workers run this same binary).
	_ "time/tzdata"

	"adaptbot/homelock"
	"adaptbot/sandbox"
)

func main() {
	// The sandbox's worker process first: it must not read the server's
	// configuration or touch its files, and must not catch the server's
	// signals. The server starts it with its pipes; `adaptbot worker` typed
	// by hand has none, and goes on as a command like the others (a fleet
	// worker with --nats, or a message that says what it needs).
	if len(os.Args) == 2 && os.Args[1] == "worker" && startedAsWorker() {
		if err := sandbox.ServeWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "adaptbot worker:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitError ends the program with its code. Err, if set, is printed, and
// then usage, if set; a nil Err means the command has already said what
// went wrong.
type exitError struct {
	code  int
	err   error
	usage string
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a command line that cannot run: exit status 2, one line
// that says what is wrong, then the command's usage.
func usageError(usage, format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...), usage: usage}
}

// exitCode is the one place that turns run's error into an exit status,
// printing the error unless the command already has.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	ee, ok := errors.AsType[*exitError](err)
	if ok {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintln(stderr, "adaptbot:", err)
	if ok && ee.usage != "" {
		fmt.Fprint(stderr, "\n"+ee.usage)
	}
	return code
}

const usage = `AdaptBot: a chat agent that builds its own tools.

Usage:
  adaptbot [serve]                       run the server (the one process that changes tools)
  adaptbot tools list                    the tools, AdaptBot's and the MCP servers'
  adaptbot tools show NAME               a tool's entry and source
  adaptbot tools run NAME [JSON-ARGS]    run a tool           (through the server)
  adaptbot tools create "REQUEST"        build a new tool     (through the server)
  adaptbot tools modify NAME "REQUEST"   change a tool        (through the server)
  adaptbot tools delete NAME [--yes]     delete a tool        (through the server)
  adaptbot tools rollback NAME VERSION   serve an old version (through the server)
  adaptbot tools approve NAME            approve a pending tool (through the server)
  adaptbot tools test NAME               re-run a tool's stored examples
  adaptbot tools history NAME            a tool's kept versions
  adaptbot tools export NAME --out DIR   a Go module serving the tools over MCP
  adaptbot tools export NAME --bundle F  a bundle of them for another AdaptBot
  adaptbot tools import FILE             bring a bundle's tools in (through the server)
  adaptbot tools failures NAME           a tool's failure cases from use (through the server)
  adaptbot tools repair NAME [CASE...]   repair a tool from them (through the server)
  adaptbot route [QUERY]                 the tools the router picks for QUERY
  adaptbot route --eval DIR              router benchmark on a dataset
  adaptbot report [--format F] [FILTERS] summarize, or export, the benchmarks CSV
  adaptbot mcp                           serve AdaptBot's tools over MCP (stdio)
  adaptbot mcp validate                  check the MCP servers file
  adaptbot search QUERY                  search AdaptBot's and the MCP servers' tools
  adaptbot users add NAME --role ROLE    add a person; prints their API key once (through the server)
  adaptbot users list|role|rotate|remove the users, their roles and keys (through the server)
  adaptbot config                        the settings in effect and where each came from
  adaptbot worker --nats URL             join the worker fleet: run tool calls for the replicas
  adaptbot worker                        (internal) a sandbox worker process

"adaptbot COMMAND --help" says more about each. Commands that change tools
send the change to the server at ADAPTBOT_ADDR (start it with "adaptbot
serve"). Configuration comes from the environment: see "adaptbot config".
`

const (
	serveUsage = `Usage: adaptbot [serve]

Runs the server on ADAPTBOT_ADDR: the chat page, the HTTP API and /mcp. It is
the one process that writes the tools, the registry and the benchmarks CSV.
`
	configUsage = `Usage: adaptbot config [--format text|json]

Prints each setting's value in effect, where it came from (default or
environment) and what it means. Provider keys, the admin token, ADAPTBOT_KEY
and the OIDC client secret show as set or unset, never their values.
`
	workerUsage = `Usage: adaptbot worker --nats URL [--creds FILE] [--id ID]
       adaptbot worker

With --nats (or ADAPTBOT_NATS_URL): joins the worker fleet on NATS and runs
the replicas' tool calls in this machine's own sandbox pool, with the limits,
Landlock, seccomp and egress policy of ADAPTBOT_WORKERS, ADAPTBOT_TOOL_TIMEOUT,
ADAPTBOT_SANDBOX_LANDLOCK and ADAPTBOT_EGRESS_ALLOW. It reads no tools,
registry or benchmarks: each call brings its tool's source.

Without arguments: internal, a sandbox worker process started by the server.
`
)

// wantsHelp reports whether args ask for help: -h, -help or --help before
// any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// run is the whole program but for process concerns, so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runWith(ctx, args, getenv, stdin, stdout, stderr, hooks{})
}

// runWith is run with the tests' hooks. Help is answered before anything
// else, so it never opens, writes or starts anything; the configuration is
// read once, here.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, h hooks) error {
	cmd, rest := "serve", []string(nil)
	if len(args) > 1 {
		cmd, rest = args[1], args[2:]
	}
	if cmd == "help" || wantsHelp([]string{cmd}) {
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	help := map[string]string{"serve": serveUsage, "report": reportUsage, "config": configUsage, "route": routeUsage,
		"tools": toolsHelp(rest), "mcp": mcpHelp(rest), "search": searchUsage, "worker": workerUsage, "users": usersUsage}
	text, known := help[cmd]
	if !known {
		return usageError(usage, "unknown command %q", cmd)
	}
	if wantsHelp(rest) {
		_, err := fmt.Fprint(stdout, text)
		return err
	}
	cfg, err := loadConfig(getenv)
	if err != nil && cmd != "config" {
		return err
	}
	cfg.hooks = h
	switch cmd {
	case "serve":
		fs := newFlags("serve")
		if err := parseFlags(cfg, fs, rest, serveUsage); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usageError(serveUsage, "serve takes no arguments, got %q", fs.Args())
		}
		// One server per folder: a second one would write the same tools,
		// registry and CSV. Readers (mcp, tools list) take no lock.
		lock, err := homelock.Acquire(cfg.lockDir(), cfg.Addr)
		if err != nil {
			return err
		}
		defer lock.Release()
		cfg.lock = lock
		return explainListen(cfg.Addr, serve(ctx, cfg, getenv, stdout, stderr))
	case "tools":
		return toolsCommand(ctx, cfg, rest, getenv, stdin, stdout, stderr)
	case "route":
		return routeCommand(ctx, cfg, rest, stdin, stdout)
	case "report":
		return reportCommand(cfg, rest, stdout, stderr)
	case "mcp":
		return mcpCommand(ctx, cfg, rest, getenv, stdin, stdout, stderr)
	case "search":
		return searchCommand(ctx, cfg, rest, getenv, stdout, stderr)
	case "worker":
		return fleetWorkerCommand(ctx, cfg, rest, stdout, stderr)
	case "users":
		return usersCommand(ctx, cfg, rest, stdin, stdout, stderr)
	}
	// config: the settings in effect, even when some are bad.
	fs := newFlags("config")
	format := formatFlag(fs, "text", "text", "json")
	if ferr := parseFlags(cfg, fs, rest, configUsage); ferr != nil {
		return ferr
	}
	if ferr := format.check(configUsage); ferr != nil {
		return ferr
	}
	if fs.NArg() > 0 {
		return usageError(configUsage, "config takes no arguments, got %q", fs.Args())
	}
	if format.value == "json" {
		return writeJSON(stdout, configJSON(cfg))
	}
	if werr := writeConfig(stdout, cfg); werr != nil {
		return werr
	}
	return err
}
