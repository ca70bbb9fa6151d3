// Command adaptbot is AdaptBot: a chat server that builds its own tools.
//
//	go run ./app                 # serve the chat page on ADAPTBOT_ADDR
//	go run ./app tools list      # and the other commands: see `help`
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	// Tools call time.LoadLocation; embed the zone database so they work on
	// hosts without /usr/share/zoneinfo (workers run this same binary).
	_ "time/tzdata"

	"adaptbot/router"
	"adaptbot/sandbox"
)

func main() {
	// Worker mode first: a worker must not read the server's configuration
	// or touch its files, and must not catch the server's signals.
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		if err := sandbox.ServeWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "adaptbot worker:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	var (
		ee    exitError
		usage *router.UsageError
	)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return
	case errors.As(err, &ee):
		os.Exit(int(ee))
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "adaptbot:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stderr, "adaptbot:", err)
	os.Exit(1)
}

// exitError carries an exit code for a command that failed without a message
// of its own to add (it has printed what went wrong).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

const usage = `AdaptBot: a chat agent that builds its own tools.

Usage:
  adaptbot [serve]                       run the server (default)
  adaptbot tools list|show|create|modify|delete|test|history|rollback ...
  adaptbot route [--catalog FILE] [--top-k K] [--format text|json] [QUERY]
  adaptbot route --eval DIR              router benchmark on a dataset
  adaptbot report [--format text|md|json|csv] [--since T] [--until T] [--intent I]
                  [--tool NAME] [--path P] [--outcome ok|error] [--out FILE] [CSV]
                                         summarize (or export) the benchmarks CSV
  adaptbot mcp                           serve AdaptBot's tools over MCP (stdio)
  adaptbot mcp validate [-c FILE] [--connect]
  adaptbot search [-c FILE] [--mode auto|substring|regex|keywords|word] [--fields ...]
                  [--case-sensitive] [--sort score|server|tool] [--limit N]
                  [--format text|json|table] QUERY
  adaptbot config                        list the configuration variables
  adaptbot worker                        (internal) a sandbox worker process

Configuration comes from the environment; run "adaptbot config" to list it.
`

// run is the whole program but for process concerns, so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, rest := "serve", []string(nil)
	if len(args) > 1 {
		cmd, rest = args[1], args[2:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, getenv, stdout, stderr)
	case "tools":
		return toolsCommand(ctx, rest, getenv, stdout, stderr)
	case "route":
		return routeCommand(ctx, rest, getenv, stdin, stdout, stderr)
	case "report":
		cfg, err := loadConfig(getenv)
		if err != nil {
			return err
		}
		return reportCommand(cfg, rest, stdout, stderr)
	case "mcp":
		return mcpCommand(ctx, rest, getenv, stdin, stdout, stderr)
	case "search":
		return searchCommand(ctx, rest, getenv, stdout, stderr)
	case "config":
		width := 0
		for _, s := range settings {
			width = max(width, len(s.name))
		}
		for _, s := range settings {
			def := s.def
			if def == "" {
				def = "(empty)"
			}
			fmt.Fprintf(stdout, "%-*s %-28s %s\n", width, s.name, def, s.meaning)
		}
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}
