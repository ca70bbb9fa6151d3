package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	mcpclient "adaptbot/mcp/client"
	mcpconfig "adaptbot/mcp/config"
	mcpserver "adaptbot/mcp/server"
	"adaptbot/redact"
)

const (
	mcpUsage = `Usage: adaptbot mcp
       adaptbot mcp validate [-c|--config FILE] [--connect] [--timeout 30s]

adaptbot mcp serves AdaptBot's tools to an MCP client over standard input
and output. It opens the tools read-only, so it may run beside the server;
an MCP client starts it in a folder of its own, so set ADAPTBOT_HOME to
AdaptBot's folder.

adaptbot mcp validate checks the MCP servers file: see
"adaptbot mcp validate --help".
`
	mcpValidateUsage = `Usage: adaptbot mcp validate [-c|--config FILE] [--connect] [--timeout 30s]

Checks the MCP servers file (ADAPTBOT_MCP_CONFIG, mcp_servers.json by
default) and says exactly what is wrong and where; exit status 1 if
anything is. The file is optional: without it AdaptBot uses no external
MCP servers.

Flags:
  -c, --config FILE  the file to check instead
  --connect          also start or connect to each server and list its tools
  --timeout 30s      the time each server gets with --connect

` + mcpConfigExample
	// mcpConfigExample is the smallest useful MCP servers file.
	mcpConfigExample = `A minimal mcp_servers.json, one server started as a command and one
reached over HTTP:

  {"mcpServers": {
    "files":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "weather": {"url": "http://localhost:8000/mcp"}
  }}
`
)

// mcpHelp is the usage of `mcp`, or of `mcp validate`.
func mcpHelp(args []string) string {
	if len(args) > 0 && args[0] == "validate" {
		return mcpValidateUsage
	}
	return mcpUsage
}

// mcpCommand is `adaptbot mcp [serve]` and `adaptbot mcp validate`.
func mcpCommand(ctx context.Context, e Env, args []string) error {
	sub := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "serve":
		return mcpServeStdio(ctx, e, args)
	case "validate":
		return mcpValidate(ctx, e, args)
	case "help":
		fmt.Fprint(e.Stdout, mcpUsage)
		return nil
	}
	return UsageError(mcpUsage, "mcp: unknown subcommand %q", sub)
}

// mcpServeStdio serves the registry's tools over stdin and stdout until the
// client leaves. Stdout carries the protocol and nothing else: every log
// line goes to stderr. It opens the registry read-only, so it writes nothing,
// where it was started or in ADAPTBOT_HOME, and may run beside the server.
// Hand edits and the server's changes are followed, so clients get
// list_changed for them too.
func mcpServeStdio(ctx context.Context, e Env, args []string) error {
	fs := NewFlags("mcp")
	if err := e.Parse(fs, args, mcpUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError(mcpUsage, "mcp: unexpected arguments %q", fs.Args())
	}
	if err := e.Config.CheckHome(); err != nil {
		return err
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	reg, box, runner, err := openToolbox(ctx, e, log)
	if err != nil {
		return err
	}
	defer runner.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watching := make(chan struct{})
	watchDone := make(chan error, 1)
	go func() { watchDone <- reg.Watch(ctx, watching) }()
	select {
	case <-watching:
	case err := <-watchDone:
		return fmt.Errorf("watch tools: %w", err)
	}
	defer func() { cancel(); <-watchDone }()

	srv := mcpserver.New(box, mcpserver.Options{Log: log})
	return srv.ServeStdio(ctx, e.Stdin, e.Stdout)
}

// mcpValidate is `adaptbot mcp validate [-c FILE] [--connect]`: it says
// exactly what is wrong and where, and fails (exit status 1) if anything is.
func mcpValidate(ctx context.Context, e Env, args []string) error {
	cfg, getenv, stdout, stderr := e.Config, e.Getenv, e.Stdout, e.Stderr
	fs := NewFlags("mcp validate")
	path := mcpConfigFlag(fs, cfg)
	connect := fs.Bool("connect", false, "also connect to each server and list its tools")
	timeout := fs.Duration("timeout", mcpconfig.DefaultTimeout, "per-server time limit with --connect")
	if err := e.Parse(fs, args, mcpValidateUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError(mcpValidateUsage, "mcp validate: unexpected arguments %q (use -c FILE)", fs.Args())
	}
	mc, err := mcpconfig.LoadEnv(*path, getenv)
	if errors.Is(err, os.ErrNotExist) {
		// The file is optional; one named with -c must exist.
		if *path != cfg.MCPConfig {
			return fmt.Errorf("mcp validate: %s does not exist\n\n%s", *path, mcpConfigExample)
		}
		fmt.Fprintf(stdout, "%s: not there, so AdaptBot uses no external MCP servers (the file is optional).\n\n%s", *path, mcpConfigExample)
		return nil
	}
	if err != nil {
		var ce *mcpconfig.Error
		if errors.As(err, &ce) {
			if mc != nil {
				printWarnings(stderr, mc.Warnings)
			}
			return fmt.Errorf("invalid MCP configuration (%d problems):\n%w", len(ce.Problems), err)
		}
		return err
	}
	printWarnings(stderr, mc.Warnings)
	fmt.Fprintf(stdout, "%s: valid, %d servers\n", *path, len(mc.Servers))
	width := 0
	for _, s := range mc.Servers {
		width = max(width, len(s.Name))
	}
	var hub *mcpclient.Hub
	failed := map[string]error{}
	counts := map[string]int{}
	if *connect {
		hub = mcpclient.NewHub(mc.Enabled(), mcpclient.Options{Timeout: *timeout, Env: mcpclient.DefaultEnv(getenv)})
		defer hub.Close()
		tools, errs := hub.List(ctx)
		for _, t := range tools {
			counts[t.Server]++
		}
		for _, e := range errs {
			failed[e.Server] = e.Err
		}
	}
	for _, s := range mc.Servers {
		line := fmt.Sprintf("  %-*s  %s", width, s.Name, s.Describe())
		switch {
		case s.Disabled:
			line += "  (disabled)"
		case failed[s.Name] != nil:
			line += "\n      FAILED: " + failed[s.Name].Error()
		case hub != nil:
			line += fmt.Sprintf("\n      ok: %d tools", counts[s.Name])
		}
		fmt.Fprintln(stdout, line)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d servers could not be reached", len(failed), len(mc.Enabled()))
	}
	return nil
}
