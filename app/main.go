// Command adaptbot is AdaptBot: a chat server that builds its own tools.
//
//	go run ./app                 # serve the chat page on ADAPTBOT_ADDR
//	go run ./app tools list      # and the other commands: see `help`
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
	_ "time/tzdata"

	"adaptbot/benchmarks"
	"adaptbot/cli"
	"adaptbot/cluster"
	"adaptbot/config"
	"adaptbot/generator"
	"adaptbot/homelock"
	"adaptbot/native"
	"adaptbot/redact"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
	"adaptbot/web"
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
	os.Exit(cli.ExitCode(err, os.Stderr))
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
  adaptbot report [--format F] [FILTERS] summarize, or export, the benchmarks CSV
  adaptbot mcp                           serve AdaptBot's tools over MCP (stdio)
  adaptbot mcp validate                  check the MCP servers file
  adaptbot search QUERY                  search AdaptBot's and the MCP servers' tools
  adaptbot users add NAME --role ROLE    add a person; prints their API key once (through the server)
  adaptbot users list|role|rotate|remove the users, their roles and keys (through the server)
  adaptbot users sessions NAME           a user's browser sign-ins; --end ends them (through the server)
  adaptbot secrets set NAME --host HOST  keep a secret, read from standard input (through the server)
  adaptbot secrets list                  your secrets and the shared ones, never a value (through the server)
  adaptbot secrets delete NAME           forget your secret; --shared the team's (through the server)
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

// hooks are what tests add to the wiring: host rewrites for the toolkit
// (a tool's requests go to the test's own servers) and a look at the
// command line's flags. The binary leaves them zero.
type hooks struct {
	toolkitHosts map[string]string
	// toolkit, when set, adjusts the options of the clients that send
	// tools' requests: the tests' resolver and TLS roots.
	toolkit func(*toolkit.Options)
	// flags sees each command's flag set and usage before it parses, so a
	// test can check that the usage and docs/cli.md name every flag.
	flags func(fs *flag.FlagSet, usage string)
}

// run is the whole program but for process concerns, so tests can call it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runWith(ctx, args, getenv, stdin, stdout, stderr, hooks{})
}

// runWith is run with the tests' hooks. Help is answered before anything
// else, so it never opens, writes or starts anything; the configuration is
// read once, here. The server and the fleet worker are this package's;
// every other command is cli's.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, h hooks) error {
	cmd, rest := "serve", []string(nil)
	if len(args) > 1 {
		cmd, rest = args[1], args[2:]
	}
	if cmd == "help" || wantsHelp([]string{cmd}) {
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	text, known := map[string]string{"serve": serveUsage, "worker": workerUsage}[cmd]
	if !known {
		text, known = cli.Help(cmd, rest)
	}
	if !known {
		return cli.UsageError(usage, "unknown command %q", cmd)
	}
	if wantsHelp(rest) {
		_, err := fmt.Fprint(stdout, text)
		return err
	}
	cfg, err := config.Load(getenv)
	// The commands that run tools themselves (tools test with no server)
	// only read the folder: their sandbox compiles no native programs into
	// it.
	readOnly := cfg
	readOnly.Native = native.ModeOff
	env := cli.Env{Config: cfg, Getenv: getenv, Stdin: stdin, Stdout: stdout, Stderr: stderr, Flags: h.flags,
		Sandbox:  func(log *slog.Logger) (sandbox.Runner, error) { return newRunner(readOnly, h, log) },
		ServeMCP: func(ctx context.Context) error { return serveMCP(ctx, cfg, h, getenv, stdin, stdout, stderr) }}
	if cmd == "config" {
		// The settings in effect, even when some are bad: err follows the table.
		return cli.Config(env, rest, err)
	}
	if err != nil {
		return err
	}
	switch cmd {
	case "serve":
		fs := cli.NewFlags("serve")
		if err := env.Parse(fs, rest, serveUsage); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return cli.UsageError(serveUsage, "serve takes no arguments, got %q", fs.Args())
		}
		// One server per folder: a second one would write the same tools,
		// registry and CSV. Readers (tools list, show) take no lock; `adaptbot
		// mcp` with no server takes it, as the folder's one writer.
		lock, err := homelock.Acquire(cfg.LockDir(), cfg.Addr)
		if err != nil {
			return err
		}
		defer lock.Release()
		return explainListen(cfg.Addr, serve(ctx, cfg, h, lock, getenv, stdout, stderr))
	case "worker":
		return fleetWorkerCommand(ctx, env, h, rest)
	}
	return cli.Run(ctx, cmd, rest, env)
}

// serve runs the HTTP server until ctx ends. lock is its hold on the
// folder, which learns the address it listens on.
func serve(ctx context.Context, cfg config.Config, h hooks, lock *homelock.Lock, getenv func(string) string, stdout, stderr io.Writer) error {
	log := slog.New(redact.Handler(slog.NewTextHandler(stderr, nil)))
	metrics, stopTelemetry, err := startTelemetry(ctx, cfg, log, stdout)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	w, err := openWorld(ctx, cfg, h, getenv, log, metrics)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := watchWorld(metrics, w); err != nil {
		return err
	}
	bench, err := w.openRecords(ctx)
	if err != nil {
		return err
	}
	defer bench.Close()
	var stats *benchmarks.Store
	if w.link != nil {
		// Every replica's rows, from the cluster's stream; this replica's
		// go there through the spool.
		if stats, err = w.link.FollowRows(ctx, filepath.Join(filepath.Dir(cfg.Benchmarks), "nats-spool"), bench, log); err != nil {
			return err
		}
	} else {
		stats = loadStats(bench, log)
	}
	if cfg.Learn {
		learnFromBenchmarks(w.feed, bench.Path(), log)
	}
	for _, warning := range w.reg.Warnings() {
		fmt.Fprintln(stdout, "warning:", warning)
	}

	w.gen.RetestOnChange(ctx, func(rep *generator.ExampleReport, err error) {
		switch {
		case err != nil:
			log.Warn("examples not re-run", "err", err)
		case !rep.OK:
			log.Warn("a changed tool fails its examples", "tool", rep.Tool, "version", rep.Version, "failures", rep.Failures())
		default:
			log.Info("a changed tool passes its examples", "tool", rep.Tool, "version", rep.Version)
		}
	})
	if cfg.LLM.EmbeddingModel != "" {
		// Embed the tools ahead of the first message; until then, and if
		// the embedding model fails, routing is lexical.
		go func() {
			if err := w.feed.Index().EmbedPending(ctx); err != nil {
				log.Warn("tool embeddings failed; routing stays lexical", "err", err)
			}
		}()
	}
	ws, err := openWorkspace(ctx, cfg, w.link, log)
	if err != nil {
		return err
	}
	defer ws.Close()
	ae, err := openAuth(ctx, cfg, w.link, log)
	if err != nil {
		return err
	}
	defer ae.Close()
	if w.vault, err = openVault(ae.vault, ae.store.Key(secretsKey)); err != nil {
		return err
	}
	svc := w.service(bench, stats, ws, metrics, ae.store)
	defer w.learn.start(svc, log)()
	edge := web.NewAuth(ae.auth, authOptions(cfg), log)
	opts := edgeOptions(cfg, log)
	opts.MCP, opts.Context = mcpHTTPHandler(ctx, w, svc), ctx
	srv := web.NewServer(svc, edge, metrics, opts)

	stopWatch, err := w.watch(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := stopWatch(); err != nil {
			log.Warn("watch stopped", "err", err)
		}
	}()
	// In a cluster, the bucket's watch brings the other replicas' changes;
	// the file watch above still takes hand edits here, which go out.
	if err := w.link.OpenMirror(ctx, w.reg, log); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	// A second server in this folder is refused naming this address, the
	// one it really got (ADAPTBOT_ADDR may ask for port 0).
	if err := lock.SetAddr(ln.Addr().String()); err != nil {
		log.Warn("the folder's lock does not name this server's address", "err", err)
	}
	fmt.Fprintf(stdout, "AdaptBot is listening on http://%s\n", ln.Addr())
	if w.model != nil {
		fmt.Fprintf(stdout, "model: %s\n", w.model.Name())
	} else {
		fmt.Fprintf(stdout, "model: %s\n", noModel)
	}
	fmt.Fprintf(stdout, "tools: %d loaded from %s\n", w.reg.Len(), cfg.ToolsDir)
	if st := w.runner.Stats(); st.Mode == sandbox.ModeWorkers {
		fmt.Fprintf(stdout, "sandbox: %d workers, %s\n", st.Size, st.Confinement)
	} else if st.Mode == cluster.ModeFleet {
		fmt.Fprintf(stdout, "sandbox: none here; tool calls go to the worker fleet on %s\n", w.link.URL)
	}
	if tier, ok := w.runner.(*native.Tier); ok {
		fmt.Fprintln(stdout, "native:", tier.Describe())
	}
	if w.link != nil {
		fmt.Fprintf(stdout, "cluster: replica %s on %s; benchmark rows go to stream %s\n", w.link.Replica, w.link.URL, cluster.RowStream)
	}
	fmt.Fprintln(stdout, edge.Describe())
	// Last, so that a person knows the server is ready when it shows.
	fmt.Fprintf(stdout, "ready: open %s in a browser\n", openURL(ln.Addr()))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// noModel is what the server says at start without a model: what is off,
// what works, and the settings that turn chat on.
const noModel = "none configured, so chat answers and tool building are off. Turn them on with a provider's key, " +
	"e.g. OPENAI_API_KEY=sk-... go run ./app (or OPENAI_BASE_URL, ANTHROPIC_API_KEY, GOOGLE_API_KEY, OLLAMA_HOST: " +
	"README.md, \"Turn on a model\"). Running tools, the tools pages and the dashboard work without one"

// openURL is the address a person opens for the server listening on addr:
// loopback for an unspecified host (0.0.0.0, ::).
func openURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
