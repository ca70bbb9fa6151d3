package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"adaptbot/config"
	"adaptbot/homelock"
	mcpclient "adaptbot/mcp/client"
	mcpconfig "adaptbot/mcp/config"
	mcpserver "adaptbot/mcp/server"
	"adaptbot/redact"
)

const (
	mcpUsage = `Usage: adaptbot mcp
       adaptbot mcp validate [-c|--config FILE] [--connect] [--timeout 30s]

adaptbot mcp serves AdaptBot's tools to an MCP client over standard input
and output. Every call goes through a server, with its benchmark row, trace
and failure cases, as a call to /mcp does:
  - when a server answers at ADAPTBOT_ADDR (or the folder's server answers
    at the address it holds the folder with), each call is sent to its
    /mcp with your key (ADAPTBOT_KEY, or else ADAPTBOT_ADMIN_TOKEN) and
    runs as you;
  - when none runs, it takes the folder's lock and serves the folder
    itself, as its one writer, as the local user (or as the user whose
    key ADAPTBOT_KEY is); a server, or a second adaptbot mcp, started in
    the folder meanwhile is refused. Start the server first to have both.
A folder held by a process that does not answer is refused, naming it. An
MCP client starts it in a folder of its own, so set ADAPTBOT_HOME to
AdaptBot's folder, or ADAPTBOT_ADDR to a running server.

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

// mcpServeStdio serves AdaptBot's tools over stdin and stdout until the
// client leaves. Stdout carries the protocol and nothing else: every log
// line goes to stderr. Either way every call goes through the service, with
// its row, trace and failure cases:
//   - a server answers at ADAPTBOT_ADDR, or at the address of the server
//     that holds the folder: each call is forwarded to its /mcp, with the
//     caller's key (ADAPTBOT_KEY, or else the admin token);
//   - none runs: it takes the folder's lock and serves the folder itself
//     as its one writer (Env.ServeMCP), so a server started meanwhile is
//     refused, and so is a second `adaptbot mcp`.
//
// The folder held by a process that does not answer is refused with a
// message that says which one.
func mcpServeStdio(ctx context.Context, e Env, args []string) error {
	fs := NewFlags("mcp")
	if err := e.Parse(fs, args, mcpUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError(mcpUsage, "mcp: unexpected arguments %q", fs.Args())
	}
	cfg := e.Config
	if base := cfg.ServerURL(); answers(base) {
		return mcpForward(ctx, e, base)
	}
	if base, err := folderServer(ctx, cfg); err != nil || base != "" {
		if err != nil {
			return err
		}
		return mcpForward(ctx, e, base)
	}
	if cfg.NATSURL != "" {
		return fmt.Errorf("no AdaptBot server answers at %s, and in a cluster adaptbot mcp serves only through a replica: start one (adaptbot serve), or set ADAPTBOT_ADDR to one", cfg.ServerURL())
	}
	if err := cfg.CheckHome(); err != nil {
		return err
	}
	if e.ServeMCP == nil {
		return errors.New("mcp: this program cannot serve the folder itself; start the server (adaptbot serve)")
	}
	lock, err := homelock.AcquireAs(cfg.LockDir(), "", "mcp")
	if err != nil {
		return heldRefusal(cfg, err)
	}
	defer lock.Release()
	return e.ServeMCP(ctx)
}

// serverStartup is how long `adaptbot mcp` waits for a server that holds
// the folder but does not answer yet: one still starting.
const serverStartup = 15 * time.Second

// folderServer is the address of the server that holds the folder, once it
// answers, or "" when no process holds the folder. A server still starting
// is waited for (serverStartup); a folder held by another command, or by a
// server that does not answer in time, is refused.
func folderServer(ctx context.Context, cfg config.Config) (string, error) {
	deadline := time.Now().Add(serverStartup)
	for {
		h, held, err := homelock.Read(cfg.LockDir())
		if err != nil || !held {
			return "", err
		}
		if h.Command != "" {
			return "", heldRefusal(cfg, &homelock.HeldError{Dir: cfg.LockDir(), Holder: h})
		}
		if h.Addr != "" {
			at := cfg
			at.Addr = h.Addr
			if base := at.ServerURL(); answers(base) {
				return base, nil
			}
		}
		if time.Now().After(deadline) {
			return "", heldRefusal(cfg, &homelock.HeldError{Dir: cfg.LockDir(), Holder: h})
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// heldRefusal is the error of a folder that another process holds while no
// server answers, naming it.
func heldRefusal(cfg config.Config, err error) error {
	if _, held := errors.AsType[*homelock.HeldError](err); held {
		return fmt.Errorf("no AdaptBot server answers at %s, and the folder is not free to serve from: %w", cfg.ServerURL(), err)
	}
	return err
}

// answers reports whether something accepts connections at base
// (http://host:port).
func answers(base string) bool {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 2*time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// mcpForward serves the tools of the server at base over stdio, each call
// carried out there, as the caller's key says.
func mcpForward(ctx context.Context, e Env, base string) error {
	log := slog.New(redact.Handler(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	header := http.Header{}
	if token := cmp.Or(e.Config.Identity.Key, e.Config.AdminToken); token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	keepAlive := time.Minute
	if t := e.Config.Identity.MCPSessionTimeout; t > 0 {
		keepAlive = min(keepAlive, t/3)
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	f, err := mcpserver.Dial(dialCtx, mcpserver.ForwardOptions{URL: base + "/mcp", Header: header, KeepAlive: keepAlive, Log: log})
	cancel()
	if errors.Is(err, mcpserver.ErrRefused) {
		return fmt.Errorf("%w\nadaptbot mcp sends your key: set ADAPTBOT_KEY to it (adaptbot users add NAME --role ROLE makes one)", err)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(e.Stderr, "adaptbot mcp: serving the tools of the server at %s; each call runs there\n", base)
	return f.ServeStdio(ctx, e.Stdin, e.Stdout)
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
