package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot/mcp"
	"adaptbot/registry"
	"adaptbot/router"
)

const mcpUsage = `Usage:
  adaptbot mcp                     serve AdaptBot's tools to an MCP client over stdio
  adaptbot mcp validate [-c FILE] [--connect]
                                   check the MCP servers file (default $ADAPTBOT_MCP_CONFIG,
                                   mcp_servers.json); --connect also lists each server's tools
  adaptbot search [-c FILE] [--mode auto|substring|regex|keywords|word]
                  [--fields name,title,description,schema] [--case-sensitive]
                  [--sort score|server|tool] [--limit N] [--format text|json|table]
                  [--timeout 30s] [--strict] QUERY
                                   search AdaptBot's tools and the MCP servers' tools
  adaptbot tools list [-c FILE] [--server local|NAME] [--format table|text|json] [--strict]
                                   list AdaptBot's tools and the MCP servers' tools
`

// mcpCommand is `adaptbot mcp [serve]` and `adaptbot mcp validate`.
func mcpCommand(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	sub := "serve"
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "serve":
		return mcpServeStdio(ctx, args, getenv, stdin, stdout, stderr)
	case "validate":
		return mcpValidate(ctx, args, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, mcpUsage)
		return nil
	}
	fmt.Fprint(stderr, mcpUsage)
	return fmt.Errorf("mcp: unknown subcommand %q", sub)
}

// mcpServeStdio serves the registry's tools over stdin and stdout until the
// client leaves. Stdout carries the protocol and nothing else: every log
// line goes to stderr. Hand edits in the tools folder are followed, so
// clients get list_changed for them too.
func mcpServeStdio(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		fmt.Fprint(stderr, mcpUsage)
		return fmt.Errorf("mcp: unexpected arguments %q", args)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w, err := openWorld(ctx, cfg, nil, log)
	if err != nil {
		return err
	}
	defer w.Close()

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

	srv := mcp.NewServer(w.reg, w.runner, mcp.ServerOptions{Log: log})
	return srv.ServeStdio(ctx, stdin, stdout)
}

// mcpValidate is `adaptbot mcp validate [-c FILE] [--connect]`: it says
// exactly what is wrong and where, and fails (exit status 1) if anything is.
func mcpValidate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := mcpConfigFlag(fs, getenv)
	connect := fs.Bool("connect", false, "also connect to each server and list its tools")
	timeout := fs.Duration("timeout", mcp.DefaultTimeout, "per-server time limit with --connect")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("mcp validate: unexpected arguments %q (use -c FILE)", fs.Args())
	}
	mc, err := mcp.LoadConfigEnv(*path, getenv)
	if err != nil {
		var ce *mcp.ConfigError
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
	var hub *mcp.Hub
	failed := map[string]error{}
	counts := map[string]int{}
	if *connect {
		hub = mcp.NewHub(mc.Enabled(), mcp.HubOptions{Timeout: *timeout, Env: mcp.DefaultEnv(getenv)})
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
func searchCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage) }
	path := mcpConfigFlag(fs, getenv)
	mode := fs.String("mode", "auto", "auto, substring, regex, keywords or word")
	fields := fs.String("fields", "name,title,description", "fields to search: name, title, description, schema")
	caseSensitive := fs.Bool("case-sensitive", false, "match case")
	sort := fs.String("sort", "score", "score (relevance), server or tool")
	limit := fs.Int("limit", 0, "at most N results; 0 means all")
	format := fs.String("format", "text", "text, json or table")
	timeout := fs.Duration("timeout", mcp.DefaultTimeout, "per-server time limit")
	strict := fs.Bool("strict", false, "fail if any server fails, instead of partial results")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	opts := mcp.SearchOptions{CaseSensitive: *caseSensitive, Limit: *limit, Strict: *strict}
	var err error
	var problems []string
	if opts.Mode, err = mcp.ParseMode(*mode); err != nil {
		problems = append(problems, "--mode: "+err.Error())
	}
	if opts.Fields, err = mcp.ParseFields(*fields); err != nil {
		problems = append(problems, "--fields: "+err.Error())
	}
	if opts.Sort, err = mcp.ParseSort(*sort); err != nil {
		problems = append(problems, "--sort: "+err.Error())
	}
	f, err := mcp.ParseFormat(*format)
	if err != nil {
		problems = append(problems, "--format: "+err.Error())
	}
	if *limit < 0 {
		problems = append(problems, "--limit: want a number ≥ 0")
	}
	if len(problems) > 0 {
		return fmt.Errorf("search: %s", strings.Join(problems, "; "))
	}
	query := strings.Join(fs.Args(), " ")
	catalog, closeHub, err := openCatalog(getenv, *path, *timeout, stderr)
	if err != nil {
		return err
	}
	defer closeHub()
	// Search compiles the query (a bad regex fails here) before it starts
	// any server.
	results, errs, err := catalog.Search(ctx, query, opts)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	for _, e := range errs {
		fmt.Fprintln(stderr, "warning:", e.Error())
	}
	return mcp.WriteResults(stdout, f, results)
}

// toolsList is `adaptbot tools list [--server NAME] [--format text|json|table]`:
// AdaptBot's own tools and the MCP servers' tools. --server local lists only
// AdaptBot's own and contacts no server.
func toolsList(ctx context.Context, getenv func(string) string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tools list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := mcpConfigFlag(fs, getenv)
	server := fs.String("server", "", `only this server's tools ("local" for AdaptBot's own)`)
	format := fs.String("format", "table", "table, text or json")
	timeout := fs.Duration("timeout", mcp.DefaultTimeout, "per-server time limit")
	strict := fs.Bool("strict", false, "fail if any server fails, instead of a partial list")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tools list: unexpected arguments %q", fs.Args())
	}
	f, err := mcp.ParseFormat(*format)
	if err != nil {
		return fmt.Errorf("tools list: --format: %w", err)
	}
	cfgPath := *path
	if *server == mcp.Local {
		cfgPath = "" // AdaptBot's own tools only: read no server file
	}
	catalog, closeHub, err := openCatalog(getenv, cfgPath, *timeout, stderr)
	if err != nil {
		return err
	}
	defer closeHub()
	tools, errs := catalog.List(ctx, *server)
	if *server != "" && len(errs) > 0 {
		return fmt.Errorf("tools list: %w", errs[0]) // the one server asked for failed
	}
	for _, e := range errs {
		fmt.Fprintln(stderr, "warning:", e.Error())
	}
	if *strict && len(errs) > 0 {
		return fmt.Errorf("tools list: %d of %d servers failed (listed above)", len(errs), len(catalog.Hub.Servers()))
	}
	return mcp.WriteTools(stdout, f, tools)
}

// openCatalog gathers AdaptBot's own tools, read from the registry file
// without opening the registry, and a hub for the servers of the file at
// path ("" for none). A missing file at the default path means no servers;
// a file named with -c must exist. The returned func closes the hub.
func openCatalog(getenv func(string) string, path string, timeout time.Duration, stderr io.Writer) (mcp.Catalog, func(), error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return mcp.Catalog{}, nil, err
	}
	var c mcp.Catalog
	entries, err := registry.ReadEntries(cfg.Registry)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stderr, "warning: no registry at %s: AdaptBot's own tools are not listed (run the server once to create it)\n", cfg.Registry)
	case err != nil:
		return c, nil, err
	default:
		c.Local = mcp.LocalTools(entries)
	}
	closeHub := func() {}
	if path == "" {
		return c, closeHub, nil
	}
	mc, err := loadMCPConfig(path, path != cfg.MCPConfig, getenv)
	if err != nil {
		return c, nil, err
	}
	printWarnings(stderr, mc.Warnings)
	if servers := mc.Enabled(); len(servers) > 0 {
		c.Hub = mcp.NewHub(servers, mcp.HubOptions{Timeout: timeout, Env: mcp.DefaultEnv(getenv)})
		closeHub = func() { c.Hub.Close() }
	}
	return c, closeHub, nil
}

// loadMCPConfig reads the MCP servers file, its ${VAR} references expanded
// from getenv. A missing file is no servers, unless the user named it
// (required).
func loadMCPConfig(path string, required bool, getenv func(string) string) (*mcp.Config, error) {
	mc, err := mcp.LoadConfigEnv(path, getenv)
	if errors.Is(err, os.ErrNotExist) && !required {
		return &mcp.Config{Path: path}, nil
	}
	if err != nil {
		var ce *mcp.ConfigError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("invalid MCP configuration (run `adaptbot mcp validate -c %s`):\n%w", path, err)
		}
		return nil, err
	}
	return mc, nil
}

// openHub is the hub the server keeps: the servers of ADAPTBOT_MCP_CONFIG,
// their tools fed into ix under their server names, connected in the
// background so that a slow server never delays startup. It returns nil
// when no server is configured.
func openHub(ctx context.Context, cfg Config, getenv func(string) string, ix *router.Index, log *slog.Logger) (*mcp.Hub, error) {
	mc, err := loadMCPConfig(cfg.MCPConfig, false, getenv)
	if err != nil {
		return nil, err
	}
	for _, w := range mc.Warnings {
		log.Warn("mcp: " + w)
	}
	servers := mc.Enabled()
	if len(servers) == 0 {
		return nil, nil
	}
	hub := mcp.NewHub(servers, mcp.HubOptions{Index: ix, Env: mcp.DefaultEnv(getenv), Log: log})
	go func() {
		for _, e := range hub.Connect(ctx) {
			log.Warn("mcp: server unavailable; its tools are left out until it answers", "server", e.Server, "err", e.Err)
		}
	}()
	return hub, nil
}

// mcpConfigFlag defines -c and --config, which default to
// ADAPTBOT_MCP_CONFIG.
func mcpConfigFlag(fs *flag.FlagSet, getenv func(string) string) *string {
	def := strings.TrimSpace(getenv("ADAPTBOT_MCP_CONFIG"))
	if def == "" {
		def = "mcp_servers.json"
	}
	p := new(string)
	fs.StringVar(p, "c", def, "MCP servers file")
	fs.StringVar(p, "config", def, "MCP servers file")
	return p
}

// parseInterspersed parses flags that may come after arguments, as in
// `adaptbot search weather --limit 3`; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
	return fs.Parse(append([]string{"--"}, rest...))
}

func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "warning:", s)
	}
}

// mcpHTTPHandler is the /mcp endpoint: MCP's streamable HTTP transport for
// the registry's tools. The route wraps it in the admin check. Streams
// (server-sent events, including the GET stream that carries list_changed)
// end when ctx ends, so pass the context whose end starts the shutdown.
func mcpHTTPHandler(ctx context.Context, w *world) fiber.Handler {
	srv := mcp.NewServer(w.reg, w.runner, mcp.ServerOptions{Log: w.log})
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return streamHandler(ctx, srv.Handler())
}

// sseKeepAlive is how often an idle event stream gets a comment line, which
// clients ignore; it tells a closed connection from a quiet one.
const sseKeepAlive = 20 * time.Second

// streamHandler runs a net/http handler inside Fiber without buffering
// streamed responses, which Fiber's adaptor does and which would hold
// server-sent events until the handler returns. A response the handler
// finishes without flushing is sent as one body; once it flushes, the status
// and headers go out and every later write is streamed, flushed when the
// handler flushes. The handler's request context ends when the client goes
// away (watchConn) or when base ends.
func streamHandler(base context.Context, h http.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		fctx := c.Context()
		ctx, cancel := watchConn(base, fctx.Conn()) // ends when the client leaves
		ctx = context.WithValue(ctx, http.LocalAddrContextKey, fctx.LocalAddr())
		req, err := http.NewRequestWithContext(ctx, c.Method(), string(fctx.RequestURI()), bytes.NewReader(append([]byte(nil), c.Body()...)))
		if err != nil {
			cancel()
			return badRequest(err.Error())
		}
		req.Host = string(fctx.Host())
		req.RemoteAddr = fctx.RemoteAddr().String()
		req.RequestURI = string(fctx.RequestURI())
		req.ContentLength = int64(len(c.Body()))
		fctx.Request.Header.VisitAll(func(k, v []byte) { req.Header.Add(string(k), string(v)) })

		sw := newStreamWriter()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer sw.finish()
			h.ServeHTTP(sw, req)
		}()
		select {
		case <-done:
			cancel()
			status, header, body := sw.buffered()
			copyHeader(c, header)
			c.Status(status)
			return c.Send(body)
		case <-sw.streaming:
		}
		status, header := sw.streamed()
		copyHeader(c, header)
		c.Status(status)
		sse := strings.HasPrefix(header.Get("Content-Type"), "text/event-stream")
		fctx.SetBodyStreamWriter(func(bw *bufio.Writer) {
			defer cancel()
			sw.pump(bw, sse)
		})
		return nil
	}
}

func copyHeader(c *fiber.Ctx, h http.Header) {
	for k, vs := range h {
		for i, v := range vs {
			if i == 0 {
				c.Set(k, v)
			} else {
				c.Append(k, v)
			}
		}
	}
}

// streamWriter is the http.ResponseWriter of streamHandler. Until the first
// flush it buffers; after it, writes go through chunks to pump, which runs
// on the connection's goroutine.
type streamWriter struct {
	header    http.Header
	streaming chan struct{} // closed at the first flush
	chunks    chan []byte   // nil chunk: flush now
	gone      chan struct{} // closed when the client is gone

	mu       sync.Mutex
	status   int
	buf      bytes.Buffer
	sent     http.Header // the header as it was at the first flush
	started  bool        // streaming
	finished bool
	goneOnce sync.Once
}

func newStreamWriter() *streamWriter {
	return &streamWriter{
		header:    http.Header{},
		streaming: make(chan struct{}),
		chunks:    make(chan []byte, 64),
		gone:      make(chan struct{}),
	}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.started {
		defer w.mu.Unlock()
		return w.buf.Write(p)
	}
	w.mu.Unlock()
	return len(p), w.send(append([]byte(nil), p...))
}

// Flush starts streaming, or pushes what was written so far.
func (w *streamWriter) Flush() { w.FlushError() }

// FlushError is what http.ResponseController calls.
func (w *streamWriter) FlushError() error {
	w.mu.Lock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if !w.started {
		w.started = true
		w.sent = w.header.Clone()
		pending := append([]byte(nil), w.buf.Bytes()...)
		w.buf.Reset()
		w.mu.Unlock()
		close(w.streaming)
		if len(pending) > 0 {
			if err := w.send(pending); err != nil {
				return err
			}
		}
		return w.send(nil)
	}
	w.mu.Unlock()
	return w.send(nil)
}

func (w *streamWriter) send(chunk []byte) error {
	select {
	case w.chunks <- chunk:
		return nil
	case <-w.gone:
		return errors.New("the client went away")
	}
}

// buffered returns the whole response of a handler that has returned
// without flushing.
func (w *streamWriter) buffered() (int, http.Header, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	return status, w.header, w.buf.Bytes()
}

// streamed returns the status and header of a response that has started
// streaming, as they were at the first flush.
func (w *streamWriter) streamed() (int, http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.sent
}

// finish ends the stream once the handler has returned.
func (w *streamWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.finished {
		w.finished = true
		close(w.chunks)
	}
}

// pump writes chunks to the connection until the handler finishes or the
// client goes away; an idle event stream gets a comment line now and then.
func (w *streamWriter) pump(bw *bufio.Writer, sse bool) {
	defer w.goneOnce.Do(func() { close(w.gone) })
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	midEvent := false // data written since the last flush: no comment in between
	for {
		select {
		case chunk, ok := <-w.chunks:
			if !ok {
				bw.Flush()
				return
			}
			if chunk != nil {
				if _, err := bw.Write(chunk); err != nil {
					return
				}
				midEvent = true
				continue
			}
			if err := bw.Flush(); err != nil {
				return
			}
			midEvent = false
		case <-tick.C:
			if !sse || midEvent {
				continue
			}
			if _, err := bw.WriteString(": keep-alive\n\n"); err != nil {
				return
			}
			if err := bw.Flush(); err != nil {
				return
			}
		}
	}
}
