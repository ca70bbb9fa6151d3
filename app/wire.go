package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/clip"
	"adaptbot/cluster"
	"adaptbot/config"
	"adaptbot/generator"
	"adaptbot/homelock"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/llm"
	"adaptbot/llm/provider"
	mcpclient "adaptbot/mcp/client"
	mcpconfig "adaptbot/mcp/config"
	mcpserver "adaptbot/mcp/server"
	"adaptbot/native"
	"adaptbot/redact"
	"adaptbot/registry"
	"adaptbot/router"
	"adaptbot/sandbox"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/toolkit"
)

// world is every long-lived piece of AdaptBot, wired from a Config: the
// server's.
type world struct {
	cfg    config.Config
	log    *slog.Logger
	model  llm.Model
	runner sandbox.Runner
	reg    *registry.Registry
	box    *toolbox.Set // the registry's tools and the hub's
	feed   *router.Feed
	agent  *agent.Agent
	gen    *generator.Generator
	hub    *mcpclient.Hub // nil without external MCP servers
	link   *cluster.Link  // nil without ADAPTBOT_NATS_URL
	learn  *learningParts // failure cases (learning.go); nil in tests that need none
}

// openWorld wires AdaptBot, its sandbox started with h. With getenv set
// (the server), it also connects to the external MCP servers of
// ADAPTBOT_MCP_CONFIG, whose tools join the router and the agent.
func openWorld(ctx context.Context, cfg config.Config, h hooks, getenv func(string) string, log *slog.Logger, m *telemetry.Metrics) (*world, error) {
	w := &world{cfg: cfg, log: log}
	model, err := provider.New(ctx, cfg.LLM)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	// Every model call, a chat's, a build's or a plan's, gets its span and
	// its count.
	model = telemetry.WrapModel(model, m)
	w.model = model

	if w.link, err = cluster.OpenLink(cluster.Options{URL: cfg.NATSURL, Creds: cfg.NATSCreds, Log: log}, cfg.ReplicaID); err != nil {
		return nil, err
	}
	if cfg.Fleet {
		w.runner = cluster.NewFleet(w.link.NC, cfg.ToolTimeout)
	} else if w.runner, err = newRunner(cfg, h, log); err != nil {
		w.link.Close()
		return nil, err
	}
	ready := false
	defer func() {
		if !ready {
			w.Close()
		}
	}()

	var compiler registry.Compiler = w.runner
	if cfg.Fleet {
		compiler = cluster.FleetCompiler{Runner: w.runner, Log: log}
	}
	// The hub is opened (not connected) first: a tool may call an external
	// server's tool even before the server answers.
	if getenv != nil {
		if w.hub, err = openHub(cfg, getenv, log); err != nil {
			return nil, err
		}
	}
	servers := func() []string {
		if w.hub == nil {
			return nil
		}
		return w.hub.Servers()
	}
	w.reg, err = registry.Open(ctx, registry.Options{ToolsDir: cfg.ToolsDir, Path: cfg.Registry, HistoryKeep: cfg.HistoryKeep,
		Compiler: compiler, Log: log, Review: cfg.Review, Known: toolbox.OfServers(servers)})
	if err != nil {
		return nil, err
	}
	w.connectNative()
	w.box = toolbox.New(w.reg, w.runner)
	w.box.LimitCallDepth(cfg.MaxCallDepth)
	var describe func(string) string
	if w.hub != nil {
		w.box.Join(w.hub)
		describe = w.hub.Description
	}
	embedder, err := provider.NewEmbedder(ctx, cfg.LLM)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	var opts []router.Option
	if embedder != nil {
		opts = append(opts, router.WithEmbedder(embedder))
	}
	w.feed = router.NewFeed(router.New(opts...), w.box, router.FeedOptions{Learn: cfg.Learn, Describe: describe})
	if w.hub != nil {
		connectHub(ctx, w.hub, log)
	}

	// The generator works without a model for what needs none: deletes and
	// re-running a tool's examples. Builds say plainly that they need one.
	// In a cluster the generator also takes the cluster-wide lock on the
	// name it builds, once the name is decided (w.link.Lock is a no-op on
	// files).
	// It writes tools that may call the tools the router finds for the
	// request, and runs their examples with the real callees.
	w.gen, err = generator.New(generator.Options{Model: model, Registry: w.reg, Runner: w.runner, MaxAttempts: cfg.BuildAttempts,
		Log: log, Claim: w.link.Lock, Tools: w.box, Finder: w.feed})
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}

	// The agent sees the one toolbox: each Call validates its arguments,
	// then runs in the sandbox or on the tool's MCP server. The builds a
	// chat decides on go through the service (see service.Chat).
	deps := agent.Deps{Model: model, Tools: w.box, Finder: w.feed}
	w.agent, err = agent.New(deps, agent.Config{Shortlist: cfg.Shortlist, MaxDiscovery: cfg.MaxDiscovery,
		Passive: cfg.Passive, MaxSteps: cfg.MaxSteps, Log: log})
	if err != nil {
		return nil, err
	}
	ready = true
	return w, nil
}

// newRunner starts the sandbox the configuration asks for, with the tests'
// worker command and host rewrites.
func newRunner(cfg config.Config, h hooks, log *slog.Logger) (sandbox.Runner, error) {
	mode := sandbox.ModeWorkers
	if cfg.InProcess {
		mode = sandbox.ModeInProcess
	}
	opts := sandbox.Options{
		Mode:          mode,
		PoolSize:      cfg.Workers,
		CallTimeout:   cfg.ToolTimeout,
		Toolkit:       toolkit.Options{Policy: cfg.Egress, Rewrite: h.toolkitHosts},
		Landlock:      cfg.Landlock,
		WorkerCommand: h.workerCommand,
		WorkerEnv:     h.workerEnv,
		Log:           log,
	}
	runner, err := sandbox.New(opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return withNative(cfg, runner, opts, log), nil
}

func (w *world) Close() error {
	if w.hub != nil {
		w.hub.Close()
	}
	err := w.runner.Close()
	w.link.Close()
	return err
}

// openBench opens the benchmarks CSV, and says where an older file went if it
// had to be moved aside.
func openBench(cfg config.Config, log *slog.Logger) (*benchmarks.Logger, error) {
	bench, err := benchmarks.Open(cfg.Benchmarks)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	switch p := bench.Rotated(); {
	case p != "" && bench.Upgraded():
		log.Info("benchmarks: the CSV had an older header; its rows now carry the new columns (empty), and the original is kept", "at", p)
	case p != "":
		log.Warn("benchmarks: the CSV had another header; moved it aside, unchanged", "to", p)
	}
	return bench, nil
}

// learnFromBenchmarks teaches the router what past chats in the benchmarks
// CSV at path ran tools for without error. A file that is missing teaches
// nothing; bad lines are skipped with a warning, since the rest is still
// good.
func learnFromBenchmarks(f *router.Feed, path string, log *slog.Logger) {
	// Streamed, keeping only what is learned from: holding every row of a
	// million-row file took over a gigabyte at start-up.
	var uses []router.Use
	err := benchmarks.ScanFile(path, func(r benchmarks.Row) error {
		if r.Intent == benchmarks.IntentChat && r.ToolExecution == benchmarks.True {
			uses = append(uses, router.Use{Tool: strings.Clone(r.Category), Request: strings.Clone(r.Query)})
		}
		return nil
	})
	if bad, ok := errors.AsType[*benchmarks.BadLinesError](err); ok {
		log.Warn("router: some benchmark rows were not read", "err", bad)
	} else if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("router: learned nothing from the benchmarks CSV", "err", err)
		}
		return
	}
	if n := f.LearnFrom(uses); n > 0 {
		log.Info("router: learned from past requests", "requests", n, "from", path)
	}
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
	if w.learn, err = openFailures(ctx, cfg, w.link, log); err != nil {
		return err
	}
	bench, err := openBench(cfg, log)
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
	svc := w.service(bench, stats, ws, metrics, ae.store)
	ae.ops = svc // the users API through the service: rows, traces, spans
	defer w.learn.start(svc, log)()
	srv := NewServer(Deps{Config: cfg, Service: svc, MCP: mcpHTTPHandler(ctx, w, svc), Log: log, Workspace: ws, Auth: ae, Metrics: metrics})

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watching := make(chan struct{})
	watchDone := make(chan error, 1)
	go func() { watchDone <- w.reg.Watch(watchCtx, watching) }()
	select {
	case <-watching:
	case err := <-watchDone:
		return fmt.Errorf("watch tools: %w", err)
	}
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
		fmt.Fprintf(stdout, "model: none configured; chat answers and tool building are off until one is set (OPENAI_API_KEY or OPENAI_BASE_URL, ANTHROPIC_API_KEY, GOOGLE_API_KEY or OLLAMA_HOST); running tools directly works\n")
	}
	fmt.Fprintf(stdout, "tools: %d loaded from %s\n", w.reg.Len(), cfg.ToolsDir)
	if st := w.runner.Stats(); st.Mode == sandbox.ModeWorkers {
		fmt.Fprintf(stdout, "sandbox: %d workers, %s\n", st.Size, st.Confinement)
	} else if st.Mode == cluster.ModeFleet {
		fmt.Fprintf(stdout, "sandbox: none here; tool calls go to the worker fleet on %s\n", w.link.URL)
	}
	if w.link != nil {
		fmt.Fprintf(stdout, "cluster: replica %s on %s; benchmark rows go to stream %s\n", w.link.Replica, w.link.URL, cluster.RowStream)
	}
	fmt.Fprintln(stdout, ae.describe())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	stopWatch()
	if werr := <-watchDone; werr != nil && !errors.Is(werr, context.Canceled) {
		log.Warn("watch stopped", "err", werr)
	}
	return err
}

// openHub is the hub the server keeps: the servers of ADAPTBOT_MCP_CONFIG,
// not connected yet. It returns nil when no server is configured.
func openHub(cfg config.Config, getenv func(string) string, log *slog.Logger) (*mcpclient.Hub, error) {
	mc, err := mcpconfig.LoadOptional(cfg.MCPConfig, false, getenv)
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
	return mcpclient.NewHub(servers, mcpclient.Options{Env: mcpclient.DefaultEnv(getenv), Log: log}), nil
}

// connectHub connects the hub's servers in the background, so that a slow
// server never delays startup; their tools join the toolbox as each one
// lists them.
func connectHub(ctx context.Context, hub *mcpclient.Hub, log *slog.Logger) {
	go func() {
		for _, e := range hub.Connect(ctx) {
			log.Warn("mcp: server unavailable; its tools are left out until it answers", "server", e.Server, "err", e.Err)
		}
	}()
}

// service is the one place requests are carried out, over the world's
// parts: every door of the server goes through it.
func (w *world) service(bench *benchmarks.Logger, stats *benchmarks.Store, ws *Workspace, m *telemetry.Metrics, people *users.Store) *service.Service {
	d := service.Deps{Agent: w.agent, Tools: w.box, Registry: w.reg, Generator: w.gen, Log: w.log,
		ToolTimeout: w.cfg.ToolTimeout, Review: w.cfg.Review, Learning: w.learn.learning(w.cfg)}
	if m != nil {
		d.Metrics = m
	}
	if bench != nil {
		d.Rows = bench
	}
	if ws != nil && ws.Traces != nil {
		d.Traces = ws.Traces
	}
	if w.link != nil {
		d.Cluster = w.link
	}
	if people != nil {
		d.Users = people
	}
	if stats != nil {
		d.Stats = stats
	}
	if tier, ok := w.runner.(*native.Tier); ok {
		d.Tiers = tier
	}
	if w.runner != nil {
		d.Sandbox = w.runner
	}
	if w.hub != nil {
		d.Remote = w.hub
	}
	return service.New(d)
}

// mcpHTTPHandler is the /mcp endpoint: MCP's streamable HTTP transport for
// the registry's tools, whose calls go through the service (a row and a
// trace each, as for a direct run). Streams (server-sent events, including
// the GET stream that carries list_changed) end when ctx ends, so pass the
// context whose end starts the shutdown.
func mcpHTTPHandler(ctx context.Context, w *world, svc *service.Service) fiber.Handler {
	call := func(ctx context.Context, name string, args json.RawMessage) (string, error) {
		res, err := svc.Run(ctx, name, args)
		if err != nil {
			return "", err
		}
		return res.Output, nil
	}
	// Each call is its own HTTP request's, with the identity the edge
	// established for it (so a role change or a removal holds at the next
	// call); the session is held to the person who opened it.
	user := func(r *http.Request) string {
		id := identity.From(r.Context())
		if !id.Known() {
			return ""
		}
		if id.Pseudonym != "" {
			return id.Pseudonym
		}
		return "name:" + id.Name
	}
	// A call of a tool that does not serve here is refused by the SDK
	// before any handler: its row says so, as a run's would (the role
	// first, then the name).
	refuse := func(ctx context.Context, name string, args json.RawMessage, err error) {
		if perr := service.Permit(identity.From(ctx), identity.RunTool); perr != nil {
			err = perr
		}
		name = clip.String(name, maxRefusedName)
		svc.Refuse(ctx, service.Refused{Intent: benchmarks.IntentRun, Category: name, Tool: name, Query: string(args), Err: err})
	}
	srv := mcpserver.New(w.box, mcpserver.Options{Log: w.log, Call: call, Refuse: refuse, User: user, SessionTimeout: w.cfg.Identity.MCPSessionTimeout})
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return streamHandler(ctx, srv.Handler())
}
