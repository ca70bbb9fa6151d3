package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/config"
	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/identity/users"
	"adaptbot/llm"
	"adaptbot/llm/provider"
	mcpclient "adaptbot/mcp/client"
	mcpconfig "adaptbot/mcp/config"
	mcpserver "adaptbot/mcp/server"
	"adaptbot/native"
	"adaptbot/registry"
	"adaptbot/router"
	"adaptbot/sandbox"
	"adaptbot/secrets"
	"adaptbot/service"
	"adaptbot/telemetry"
	"adaptbot/toolbox"
	"adaptbot/traces"
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
	hooks  hooks
	names  *lateSecrets   // the generator's list of the caller's secrets (act.go)
	vault  *secrets.Store // set once the users are open; nil keeps none
}

// openWorld wires AdaptBot, its sandbox started with h. With getenv set
// (the server), it also connects to the external MCP servers of
// ADAPTBOT_MCP_CONFIG, whose tools join the router and the agent.
func openWorld(ctx context.Context, cfg config.Config, h hooks, getenv func(string) string, log *slog.Logger, m *telemetry.Metrics) (*world, error) {
	w := &world{cfg: cfg, log: log, hooks: h, names: &lateSecrets{}}
	model, err := provider.New(ctx, cfg.LLM)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	// Every model call, a chat's, a build's or a plan's, gets its span and
	// its count.
	model = telemetry.WrapModel(model, m)
	w.model = model

	if w.link, err = cluster.OpenLink(cluster.Options{URL: cfg.NATSURL, Creds: cfg.NATSCreds, Monitor: cfg.NATSMonitor, Log: log}, cfg.ReplicaID); err != nil {
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
		Log: log, Claim: w.link.Lock, Tools: w.box, Finder: w.feed, Secrets: w.names})
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
// host rewrites.
func newRunner(cfg config.Config, h hooks, log *slog.Logger) (sandbox.Runner, error) {
	mode := sandbox.ModeWorkers
	if cfg.InProcess {
		mode = sandbox.ModeInProcess
	}
	opts := sandbox.Options{
		Mode:        mode,
		PoolSize:    cfg.Workers,
		CallTimeout: cfg.ToolTimeout,
		Toolkit:     toolkitOptions(cfg, h),
		Landlock:    cfg.Landlock,
		Log:         log,
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

// openRecords opens what every call through a door writes besides its
// trace: the failure cases (w.learn) and the benchmarks CSV, returned for
// the caller to close.
func (w *world) openRecords(ctx context.Context) (*benchmarks.Logger, error) {
	var err error
	if w.learn, err = openFailures(ctx, w.cfg, w.link, w.log); err != nil {
		return nil, err
	}
	return openBench(w.cfg, w.log)
}

// watch starts the registry's watch of the tools folder and returns once
// it watches, so a hand edit from then on is taken in. stop ends the watch
// and waits for it; its error is the watch's own, not the cancellation.
func (w *world) watch(ctx context.Context) (stop func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	watching := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- w.reg.Watch(ctx, watching) }()
	select {
	case <-watching:
	case err := <-done:
		cancel()
		if err == nil {
			// ctx ended as the watch began (a server stopped at once):
			// nothing is left to watch for, and nothing failed.
			return func() error { return nil }, nil
		}
		return nil, fmt.Errorf("watch tools: %w", err)
	}
	return func() error {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	}, nil
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
		if r.Intent == adaptbot.IntentChat && r.ToolExecution == benchmarks.True {
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
	return mcpclient.NewHub(inFolder(servers, filepath.Dir(cfg.MCPConfig)), mcpclient.Options{Env: mcpclient.DefaultEnv(getenv), Log: log}), nil
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
		ToolTimeout: w.cfg.ToolTimeout, Review: w.cfg.Review, Learning: w.learn.learning(w.cfg),
		Secrets: w.vault, ApprovalTimeout: w.cfg.ApprovalTimeout}
	if m != nil {
		d.Metrics = m
	}
	if bench != nil {
		d.Rows = bench
	}
	if ws != nil && ws.Traces != nil {
		d.Traces = ws.Traces
	}
	if ws != nil && ws.Model != nil {
		d.Model = ws.Model
	} else {
		// No check runs: /healthz says what the configuration names.
		d.Model = provider.NewCheck(w.cfg.LLM)
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
	svc := service.New(d)
	w.act(w.vault, svc) // tools' requests go through the service's approvals
	return svc
}

// mcpHTTPHandler is the /mcp endpoint: MCP's streamable HTTP transport for
// the registry's tools, whose calls go through the service (a row and a
// trace each, as for a direct run). Streams (server-sent events, including
// the GET stream that carries list_changed) end when ctx ends, so pass the
// context whose end starts the shutdown.
func mcpHTTPHandler(ctx context.Context, w *world, svc *service.Service) http.Handler {
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
		if perr := identity.Permit(identity.From(ctx), identity.RunTool); perr != nil {
			err = perr
		}
		svc.Refuse(ctx, adaptbot.Refused{Intent: adaptbot.IntentRun, Category: name, Tool: name, Query: string(args), Err: err})
	}
	srv := mcpserver.New(w.box, mcpserver.Options{Log: w.log, Call: call, Refuse: refuse, User: user, SessionTimeout: w.cfg.Identity.MCPSessionTimeout})
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return srv.Handler()
}

// failuresDir is where a server on files keeps its tools' failure cases,
// one JSON file per tool: beside the tools' history, written by the server
// alone.
func failuresDir(cfg config.Config) string { return filepath.Join(cfg.ToolsDir, ".failures") }

// learningParts are the failure store and what keeps it: the writer of
// its changes, and in a cluster the follower of the other replicas'.
type learningParts struct {
	store  *failures.Store
	follow func(ctx context.Context, store *failures.Store) error // nil on files
}

// openFailures opens the failure store: files beside the tools, or with a
// cluster link, the cluster's bucket.
func openFailures(ctx context.Context, cfg config.Config, link *cluster.Link, log *slog.Logger) (*learningParts, error) {
	var backend failures.Backend = &failures.Files{Dir: failuresDir(cfg)}
	parts := &learningParts{}
	if link != nil {
		kv, err := cluster.OpenFailures(ctx, link.NC, log)
		if err != nil {
			return nil, err
		}
		backend, parts.follow = kv, kv.Follow
	}
	st, err := failures.Load(ctx, backend, failures.Options{Keep: cfg.FailuresKeep, Log: log})
	if st == nil {
		return nil, fmt.Errorf("failure cases: %w", err)
	}
	if err != nil {
		log.Warn("failures: some failure cases were not read", "err", err)
	}
	parts.store = st
	return parts, nil
}

// learning is the service's configuration for learning from use.
func (p *learningParts) learning(cfg config.Config) service.Learning {
	if p == nil {
		return service.Learning{}
	}
	return service.Learning{Failures: p.store, AutoRepair: cfg.AutoRepair, RepairAfter: cfg.RepairAfter, RepairEvery: cfg.RepairEvery,
		Skills: cfg.Skills, SkillAfter: cfg.SkillAfter}
}

// start writes the store's changes, follows the cluster's, and runs the
// automatic repairs, until the returned stop, which waits for the last
// changes to be written.
func (p *learningParts) start(svc *service.Service, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.store.Run(ctx) })
	wg.Go(func() { svc.RunLearning(ctx) })
	if p.follow != nil {
		wg.Go(func() {
			if err := p.follow(ctx, p.store); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("cluster: stopped following the failure cases", "err", err)
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// startTelemetry turns on what the configuration asks for: spans exported
// over OTLP when an endpoint is set (telemetry.Setup), and the metrics,
// which every instrumented package counts in from now on. stop flushes
// the spans still waiting, within a few seconds; call it at exit (once is
// enough; later calls do nothing).
func startTelemetry(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) (m *telemetry.Metrics, stop func(), err error) {
	shutdown, err := telemetry.Setup(ctx, cfg.Telemetry, log)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: %w", err)
	}
	fmt.Fprintf(stdout, "tracing: %s\n", cfg.Telemetry)
	m = telemetry.NewMetrics()
	restore := telemetry.Use(m)
	return m, sync.OnceFunc(func() {
		restore()
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(flushCtx); err != nil {
			log.Warn("tracing: spans not flushed at exit", "err", err)
		}
	}), nil
}

// watchWorld adds the sandbox's workers to the metrics and, in a cluster,
// NATS's connection and the spooled rows: all read at each scrape.
func watchWorld(m *telemetry.Metrics, w *world) error {
	err := m.WatchSandbox(func() telemetry.SandboxStats {
		s := w.runner.Stats()
		return telemetry.SandboxStats{Size: s.Size, Live: s.Live, Busy: s.Busy, Restarts: s.Restarts, StartFailures: s.StartFailures}
	})
	if err != nil || w.link == nil {
		return err
	}
	return m.WatchCluster(func() telemetry.ClusterStats {
		s := w.link.Status()
		return telemetry.ClusterStats{Connected: s.Connected, Spooled: s.Spooled, Dropped: s.Dropped}
	})
}

// loadStats builds the benchmark aggregates from the CSV in one streaming
// pass and has the logger keep them up to date from then on, so the
// dashboard never reads the file again. Rows another process (the CLI)
// appends later are not counted until the next start.
func loadStats(bench *benchmarks.Logger, log *slog.Logger) *benchmarks.Store {
	start := time.Now()
	stats, err := benchmarks.LoadFile(bench.Path())
	if bad, ok := errors.AsType[*benchmarks.BadLinesError](err); ok {
		log.Warn("benchmarks: some rows were not read for the dashboard", "err", bad)
	} else if err != nil {
		log.Warn("benchmarks: the dashboard starts empty", "err", err)
		stats = benchmarks.NewStore()
	}
	bench.SetSink(stats)
	if n := stats.Rows(); n > 0 {
		log.Info("benchmarks: dashboard aggregates built", "rows", n, "took", time.Since(start).Round(time.Millisecond))
	}
	return stats
}

// Workspace is what the pages for people need beyond the API: the store of
// recent requests' traces and the model check. A nil *Workspace (the CLI,
// some tests) stores nothing and checks nothing.
type Workspace struct {
	// Traces is the file beside the CSV, or in a cluster the trace stream
	// every replica reads (so a rating needs no sticky session).
	Traces service.Traces
	Model  *provider.Check
	closer io.Closer // the trace store's, if it has one
	stop   context.CancelFunc
}

// openWorkspace opens the trace store (unless ADAPTBOT_TRACES=off): the
// cluster's when link is set, else the file; and starts checking the
// model: at once, then every minute.
func openWorkspace(ctx context.Context, cfg config.Config, link *cluster.Link, log *slog.Logger) (*Workspace, error) {
	ws := &Workspace{Model: provider.NewCheck(cfg.LLM)}
	switch {
	case cfg.Traces == "":
	case link != nil:
		// While NATS is away, records wait beside the rows' spool.
		st, err := link.OpenTraces(ctx, traces.Options{}, filepath.Join(filepath.Dir(cfg.Benchmarks), "nats-spool-traces"), log)
		if err != nil {
			return nil, err
		}
		ws.Traces, ws.closer = st, st
	default:
		st, err := traces.Open(cfg.Traces, traces.Options{})
		if err != nil {
			return nil, err
		}
		ws.Traces, ws.closer = st, st
	}
	ctx, ws.stop = context.WithCancel(ctx)
	go ws.Model.Run(ctx, provider.CheckEvery, func(st provider.Status) {
		if *st.Reachable {
			log.Info("model answers", "provider", st.Provider, "url", st.URL)
		} else {
			log.Warn("model does not answer", "provider", st.Provider, "url", st.URL, "err", st.Error)
		}
	})
	return ws, nil
}

// Close stops the model check and closes the trace store.
func (w *Workspace) Close() error {
	if w == nil {
		return nil
	}
	w.stop()
	if w.closer != nil {
		return w.closer.Close()
	}
	return nil
}
