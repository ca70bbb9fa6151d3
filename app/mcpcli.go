package main

import (
	"adaptbot/toolbox"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"adaptbot/catalog"
	mcpclient "adaptbot/mcp/client"
	mcpconfig "adaptbot/mcp/config"
	mcpserver "adaptbot/mcp/server"
	"adaptbot/registry"
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
	searchUsage = `Usage: adaptbot search [flags] QUERY

Searches AdaptBot's tools and the MCP servers' tools together, best match
first. Servers that fail are reported on standard error and the results
are partial, unless --strict. To list every tool, use "adaptbot tools list".

Flags:
  -c, --config FILE    the MCP servers file (ADAPTBOT_MCP_CONFIG)
  --mode M             auto (default): regex when QUERY has regex characters,
                       keywords when it has commas, else substring; or
                       substring, regex, keywords (all must match) or word
  --fields F           where to look, comma-separated: name, title,
                       description, schema (default name,title,description)
  --case-sensitive     match case
  --sort S             score (relevance, default), server or tool
  --limit N            at most N results (0, the default: all)
  --format F           text (default), json or table
  --timeout 30s        the time each MCP server gets to list its tools
  --strict             fail when a server fails, instead of partial results
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
func mcpCommand(ctx context.Context, cfg Config, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "serve":
		return mcpServeStdio(ctx, cfg, args, stdin, stdout, stderr)
	case "validate":
		return mcpValidate(ctx, cfg, args, getenv, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, mcpUsage)
		return nil
	}
	return usageError(mcpUsage, "mcp: unknown subcommand %q", sub)
}

// mcpServeStdio serves the registry's tools over stdin and stdout until the
// client leaves. Stdout carries the protocol and nothing else: every log
// line goes to stderr. It opens the registry read-only, so it writes nothing,
// where it was started or in ADAPTBOT_HOME, and may run beside the server.
// Hand edits and the server's changes are followed, so clients get
// list_changed for them too.
func mcpServeStdio(ctx context.Context, cfg Config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("mcp")
	if err := parseFlags(cfg, fs, args, mcpUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(mcpUsage, "mcp: unexpected arguments %q", fs.Args())
	}
	if err := checkHome(cfg); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	reg, runner, err := openReadOnly(ctx, cfg, log, true)
	if err != nil {
		return err
	}
	defer runner.Close()
	w := &world{cfg: cfg, log: log, reg: reg, runner: runner, box: toolbox.New(reg, runner)}
	w.box.LimitCallDepth(cfg.MaxCallDepth)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watching := make(chan struct{})
	watchDone := make(chan error, 1)
	go func() { watchDone <- w.reg.Watch(ctx, watching) }()
	select {
	case <-watching:
	case err := <-watchDone:
		return fmt.Errorf("watch tools: %w", err)
	}
	defer func() { cancel(); <-watchDone }()

	srv := mcpserver.New(w.box, mcpserver.Options{Log: log})
	return srv.ServeStdio(ctx, stdin, stdout)
}

// mcpValidate is `adaptbot mcp validate [-c FILE] [--connect]`: it says
// exactly what is wrong and where, and fails (exit status 1) if anything is.
func mcpValidate(ctx context.Context, cfg Config, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp validate")
	path := mcpConfigFlag(fs, cfg)
	connect := fs.Bool("connect", false, "also connect to each server and list its tools")
	timeout := fs.Duration("timeout", mcpconfig.DefaultTimeout, "per-server time limit with --connect")
	if err := parseFlags(cfg, fs, args, mcpValidateUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(mcpValidateUsage, "mcp validate: unexpected arguments %q (use -c FILE)", fs.Args())
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

// searchCommand is `adaptbot search ... QUERY`: AdaptBot's tools and every
// configured server's, searched together. Servers that fail are reported on
// stderr and the results are partial, unless --strict.
func searchCommand(ctx context.Context, cfg Config, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("search")
	path := mcpConfigFlag(fs, cfg)
	mode := fs.String("mode", "auto", "auto, substring, regex, keywords or word")
	fields := fs.String("fields", "name,title,description", "fields to search: name, title, description, schema")
	caseSensitive := fs.Bool("case-sensitive", false, "match case")
	sort := fs.String("sort", "score", "score (relevance), server or tool")
	limit := fs.Int("limit", 0, "at most N results; 0 means all")
	format := fs.String("format", "text", "text, json or table")
	timeout := fs.Duration("timeout", mcpconfig.DefaultTimeout, "per-server time limit")
	strict := fs.Bool("strict", false, "fail if any server fails, instead of partial results")
	if err := parseFlags(cfg, fs, args, searchUsage); err != nil {
		return err
	}
	opts := catalog.SearchOptions{CaseSensitive: *caseSensitive, Limit: *limit, Strict: *strict}
	var err error
	var problems []string
	if opts.Mode, err = catalog.ParseMode(*mode); err != nil {
		problems = append(problems, "--mode: "+err.Error())
	}
	if opts.Fields, err = catalog.ParseFields(*fields); err != nil {
		problems = append(problems, "--fields: "+err.Error())
	}
	if opts.Sort, err = catalog.ParseSort(*sort); err != nil {
		problems = append(problems, "--sort: "+err.Error())
	}
	f, err := catalog.ParseFormat(*format)
	if err != nil {
		problems = append(problems, "--format: "+err.Error())
	}
	if *limit < 0 {
		problems = append(problems, "--limit: want a number ≥ 0")
	}
	if len(problems) > 0 {
		return usageError(searchUsage, "search: %s", strings.Join(problems, "; "))
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return usageError(searchUsage, "search: what should it look for? Give a QUERY, e.g. adaptbot search weather (adaptbot tools list lists every tool)")
	}
	cat, closeHub, err := openCatalog(cfg, getenv, *path, *timeout, stderr)
	if err != nil {
		return err
	}
	defer closeHub()
	// Search compiles the query (a bad regex fails here) before it starts
	// any server.
	results, errs, err := cat.Search(ctx, query, opts)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	for _, e := range errs {
		fmt.Fprintln(stderr, "warning:", e.Error())
	}
	return catalog.WriteResults(stdout, f, results)
}

// toolsList is `adaptbot tools list [--server NAME] [--format text|json|table]`:
// AdaptBot's own tools and the MCP servers' tools. --server local lists only
// AdaptBot's own and contacts no server.
func toolsList(ctx context.Context, cfg Config, getenv func(string) string, args []string, usage string, stdout, stderr io.Writer) error {
	fs := newFlags("tools list")
	path := mcpConfigFlag(fs, cfg)
	server := fs.String("server", "", `only this server's tools ("local" for AdaptBot's own)`)
	format := fs.String("format", "table", "table, text or json")
	timeout := fs.Duration("timeout", mcpconfig.DefaultTimeout, "per-server time limit")
	strict := fs.Bool("strict", false, "fail if any server fails, instead of a partial list")
	if err := parseFlags(cfg, fs, args, usage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(usage, "tools list: unexpected arguments %q", fs.Args())
	}
	f, err := catalog.ParseFormat(*format)
	if err != nil {
		return usageError(usage, "tools list: --format: %v", err)
	}
	cfgPath := *path
	if *server == catalog.Local {
		cfgPath = "" // AdaptBot's own tools only: read no server file
	}
	cat, closeHub, err := openCatalog(cfg, getenv, cfgPath, *timeout, stderr)
	if err != nil {
		return err
	}
	defer closeHub()
	tools, errs := cat.List(ctx, *server)
	if *server != "" && len(errs) > 0 {
		return fmt.Errorf("tools list: %w", errs[0]) // the one server asked for failed
	}
	for _, e := range errs {
		fmt.Fprintln(stderr, "warning:", e.Error())
	}
	if *strict && len(errs) > 0 {
		return fmt.Errorf("tools list: %d of %d servers failed (listed above)", len(errs), len(cat.Hub.Servers()))
	}
	return catalog.WriteTools(stdout, f, tools)
}

// openCatalog gathers AdaptBot's own tools, read from the registry file
// without opening the registry, and a hub for the servers of the file at
// path ("" for none). A missing file at the default path means no servers;
// a file named with -c must exist. The returned func closes the hub.
func openCatalog(cfg Config, getenv func(string) string, path string, timeout time.Duration, stderr io.Writer) (catalog.Catalog, func(), error) {
	var c catalog.Catalog
	entries, err := registry.ReadEntries(cfg.Registry)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stderr, "warning: no registry at %s: AdaptBot's own tools are not listed (run the server once to create it)\n", cfg.Registry)
	case err != nil:
		return c, nil, err
	default:
		c.Local = catalog.LocalTools(entries)
	}
	closeHub := func() {}
	if path == "" {
		return c, closeHub, nil
	}
	mc, err := mcpconfig.LoadOptional(path, path != cfg.MCPConfig, getenv)
	if err != nil {
		return c, nil, err
	}
	printWarnings(stderr, mc.Warnings)
	if servers := mc.Enabled(); len(servers) > 0 {
		c.Hub = mcpclient.NewHub(servers, mcpclient.Options{Timeout: timeout, Env: mcpclient.DefaultEnv(getenv)})
		closeHub = func() { c.Hub.Close() }
	}
	return c, closeHub, nil
}

// mcpConfigFlag defines -c and --config, which default to
// ADAPTBOT_MCP_CONFIG.
func mcpConfigFlag(fs *flag.FlagSet, cfg Config) *string {
	p := new(string)
	fs.StringVar(p, "c", cfg.MCPConfig, "MCP servers file")
	fs.StringVar(p, "config", cfg.MCPConfig, "MCP servers file")
	return p
}

func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "warning:", s)
	}
}
