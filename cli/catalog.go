package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"adaptbot/catalog"
	"adaptbot/config"
	mcpclient "adaptbot/mcp/client"
	mcpconfig "adaptbot/mcp/config"
	"adaptbot/registry"
)

// `adaptbot search` and `adaptbot tools list`: AdaptBot's own tools, read
// from the registry file, and the MCP servers' tools, listed and searched
// together (package catalog).

const searchUsage = `Usage: adaptbot search [flags] QUERY

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

// searchCommand is `adaptbot search ... QUERY`: AdaptBot's tools and every
// configured server's, searched together. Servers that fail are reported on
// stderr and the results are partial, unless --strict.
func searchCommand(ctx context.Context, e Env, args []string) error {
	cfg, stdout, stderr := e.Config, e.Stdout, e.Stderr
	fs := NewFlags("search")
	path := mcpConfigFlag(fs, cfg)
	mode := fs.String("mode", "auto", "auto, substring, regex, keywords or word")
	fields := fs.String("fields", "name,title,description", "fields to search: name, title, description, schema")
	caseSensitive := fs.Bool("case-sensitive", false, "match case")
	sort := fs.String("sort", "score", "score (relevance), server or tool")
	limit := fs.Int("limit", 0, "at most N results; 0 means all")
	format := fs.String("format", "text", "text, json or table")
	timeout := fs.Duration("timeout", mcpconfig.DefaultTimeout, "per-server time limit")
	strict := fs.Bool("strict", false, "fail if any server fails, instead of partial results")
	if err := e.Parse(fs, args, searchUsage); err != nil {
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
		return UsageError(searchUsage, "search: %s", strings.Join(problems, "; "))
	}
	query := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(query) == "" {
		return UsageError(searchUsage, "search: what should it look for? Give a QUERY, e.g. adaptbot search weather (adaptbot tools list lists every tool)")
	}
	// A query its mode cannot read (a bad regular expression) is a bad
	// value, refused before any server starts.
	if _, err := catalog.Compile(query, opts); err != nil {
		return UsageError(searchUsage, "search: %v (--mode substring looks for the text as it is)", err)
	}
	cat, closeHub, err := openCatalog(e, *path, *timeout)
	if err != nil {
		return err
	}
	defer closeHub()
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
func toolsList(ctx context.Context, e Env, args []string, usage string) error {
	cfg, stdout, stderr := e.Config, e.Stdout, e.Stderr
	fs := NewFlags("tools list")
	path := mcpConfigFlag(fs, cfg)
	server := fs.String("server", "", `only this server's tools ("local" for AdaptBot's own)`)
	format := fs.String("format", "table", "table, text or json")
	timeout := fs.Duration("timeout", mcpconfig.DefaultTimeout, "per-server time limit")
	strict := fs.Bool("strict", false, "fail if any server fails, instead of a partial list")
	if err := e.Parse(fs, args, usage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return UsageError(usage, "tools list: unexpected arguments %q", fs.Args())
	}
	f, err := catalog.ParseFormat(*format)
	if err != nil {
		return UsageError(usage, "tools list: --format: %v", err)
	}
	cfgPath := *path
	if *server == catalog.Local {
		cfgPath = "" // AdaptBot's own tools only: read no server file
	}
	cat, closeHub, err := openCatalog(e, cfgPath, *timeout)
	if err != nil {
		return err
	}
	defer closeHub()
	if *server != "" && *server != catalog.Local {
		var names []string
		if cat.Hub != nil {
			names = cat.Hub.Servers()
		}
		if !slices.Contains(names, *server) {
			known := "it names none"
			if len(names) > 0 {
				known = "its servers are " + strings.Join(names, ", ")
			}
			return UsageError(usage, "tools list: --server %q is not an MCP server of %s (%s; --server local lists AdaptBot's own tools)", *server, cfgPath, known)
		}
	}
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
func openCatalog(e Env, path string, timeout time.Duration) (catalog.Catalog, func(), error) {
	cfg, getenv, stderr := e.Config, e.Getenv, e.Stderr
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
func mcpConfigFlag(fs *flag.FlagSet, cfg config.Config) *string {
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
