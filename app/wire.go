package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"adaptbot/agent"
	"adaptbot/benchmarks"
	"adaptbot/generator"
	"adaptbot/llm"
	"adaptbot/llm/provider"
	"adaptbot/mcp"
	"adaptbot/registry"
	"adaptbot/router"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// Set by tests so that the test binary itself serves as the sandbox worker.
var (
	workerCommand []string
	workerEnv     []string
	toolkitHosts  map[string]string
)

// world is every long-lived piece of AdaptBot, wired from a Config. The
// server and the command-line tools share it.
type world struct {
	cfg    Config
	log    *slog.Logger
	model  llm.Model
	runner sandbox.Runner
	reg    *registry.Registry
	finder *finder
	agent  *agent.Agent
	gen    *generator.Generator
	hub    *mcp.Hub // nil without external MCP servers, and in CLI commands
}

// openWorld wires AdaptBot. With getenv set (the server), it also connects
// to the external MCP servers of ADAPTBOT_MCP_CONFIG, whose tools join the
// router and the agent.
func openWorld(ctx context.Context, cfg Config, getenv func(string) string, log *slog.Logger) (*world, error) {
	w := &world{cfg: cfg, log: log}
	model, err := provider.New(ctx, cfg.LLM)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	w.model = model

	mode := sandbox.ModeWorkers
	if cfg.InProcess {
		mode = sandbox.ModeInProcess
	}
	w.runner, err = sandbox.New(sandbox.Options{
		Mode:          mode,
		PoolSize:      cfg.Workers,
		CallTimeout:   cfg.CallTimeout,
		Toolkit:       toolkit.Options{Policy: cfg.Egress, Rewrite: toolkitHosts},
		Landlock:      cfg.Landlock,
		WorkerCommand: workerCommand,
		WorkerEnv:     workerEnv,
		Log:           log,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	ready := false
	defer func() {
		if !ready {
			w.Close()
		}
	}()

	w.reg, err = registry.Open(ctx, registry.Options{ToolsDir: cfg.ToolsDir, Path: cfg.Registry, Compiler: w.runner, Log: log})
	if err != nil {
		return nil, err
	}
	embedder, err := provider.NewEmbedder(ctx, cfg.LLM)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	w.finder = newFinder(w.reg, embedder, cfg.Learn)
	w.reg.OnChange(w.finder.apply)

	// The generator works without a model for what needs none: deletes and
	// re-running a tool's examples. Builds say plainly that they need one.
	w.gen, err = generator.New(generator.Options{Model: model, Registry: w.reg, Runner: w.runner, MaxAttempts: cfg.BuildAttempts, Log: log})
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}

	var b agent.Builder
	if model != nil {
		b = genBuilder{w.gen}
	}
	deps := agent.Deps{Model: model, Tools: w.reg, Finder: w.finder, Runner: w.runner, Builder: b}
	if getenv != nil {
		if w.hub, err = openHub(ctx, cfg, getenv, w.finder.ix, log); err != nil {
			return nil, err
		}
		if w.hub != nil {
			deps.Tools, deps.Remote = mcp.ToolSet{Local: w.reg, Hub: w.hub}, w.hub
		}
	}
	w.agent, err = agent.New(deps,
		agent.Config{Shortlist: cfg.Shortlist, MaxDiscovery: cfg.MaxDiscovery, Passive: cfg.Passive})
	if err != nil {
		return nil, err
	}
	ready = true
	return w, nil
}

func (w *world) Close() error {
	if w.hub != nil {
		w.hub.Close()
	}
	return w.runner.Close()
}

// finder adapts the router to the agent, and keeps the router's index in step
// with the registry: one Upsert or Remove per change, never a rebuild.
type finder struct {
	ix     *router.Index
	learn  bool // ADAPTBOT_LEARN
	mu     sync.Mutex
	domain map[string]string // tool name → the domain it is indexed under
}

func newFinder(reg *registry.Registry, e llm.Embedder, learn bool) *finder {
	var opts []router.Option
	if e != nil {
		opts = append(opts, router.WithEmbedder(e))
	}
	f := &finder{ix: router.New(opts...), learn: learn, domain: map[string]string{}}
	for _, t := range reg.Serving() {
		f.upsert(t.Entry)
	}
	return f
}

func (f *finder) upsert(e registry.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ix.Upsert(router.Doc{Server: e.Category, Name: e.Name, Description: e.Description, Params: router.ParamsFromSchema(e.Parameters)})
	if old, ok := f.domain[e.Name]; ok && old != e.Category {
		// A new category is a new domain, so a new key: keep what the tool
		// learned under the old one.
		f.ix.MoveLearned(old, e.Category, e.Name)
		f.ix.Remove(old, e.Name)
	}
	f.domain[e.Name] = e.Category
}

func (f *finder) apply(ev registry.Event) {
	switch ev.Kind {
	case registry.Added, registry.Updated:
		if ev.Entry.Status == registry.OK {
			f.upsert(ev.Entry)
		}
	case registry.Removed:
		f.mu.Lock()
		f.ix.Remove(f.domain[ev.Entry.Name], ev.Entry.Name)
		delete(f.domain, ev.Entry.Name)
		f.mu.Unlock()
	}
}

// Learn tells the router that tool (a local name or "server/tool") served
// request well; it does nothing when learning is off or the tool is gone.
// An external tool whose server has not listed its tools yet learns the
// request when it does.
func (f *finder) Learn(tool, request string) {
	f.learnOne(tool, request)
}

// learnOne is Learn, reporting whether the request was taken (now, or to
// wait for its external tool).
func (f *finder) learnOne(tool, request string) bool {
	if !f.learn {
		return false
	}
	f.mu.Lock()
	domain, local := f.domain[tool]
	f.mu.Unlock()
	if local {
		return f.ix.Learn(domain, tool, request)
	}
	server, name, external := mcp.SplitID(tool)
	if external {
		f.ix.LearnLater(server, name, request)
	}
	return external
}

// learnFrom teaches the router the requests that past chats ran a tool for
// without error, from the benchmark rows; it returns how many it took. A
// local tool that is gone learns nothing from them. Only the rows the
// router would keep are taught (the newest LearnedPerTool per tool, and
// LearnedInAll in all), oldest first: a CSV of a long-running server holds
// far more, and teaching each only for it to be forgotten took about 0.2 s
// of start-up at 100,000 rows (reading them takes another 0.25 s).
func (f *finder) learnFrom(rows []benchmarks.Row) int {
	perTool := map[string]int{}
	var keep []int
	for i := len(rows) - 1; i >= 0 && len(keep) < router.LearnedInAll; i-- {
		r := rows[i]
		if r.Intent != benchmarks.IntentChat || r.ToolExecution != benchmarks.True || perTool[r.Category] == router.LearnedPerTool {
			continue
		}
		perTool[r.Category]++
		keep = append(keep, i)
	}
	n := 0
	for j := len(keep) - 1; j >= 0; j-- {
		if r := rows[keep[j]]; f.learnOne(r.Category, r.Query) {
			n++
		}
	}
	return n
}

// Find returns the names of the best tools for query: a local tool by its
// name, an external one as "server/tool".
func (f *finder) Find(ctx context.Context, query string, k int) []string {
	hits := f.ix.RouteContext(ctx, query, k, router.Fused)
	names := make([]string, 0, len(hits))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hits {
		if domain, local := f.domain[h.Name]; local && domain == h.Server {
			names = append(names, h.Name)
		} else {
			names = append(names, h.Server+"/"+h.Name)
		}
	}
	return names
}

// genBuilder lets the chat agent run builds for BUILD messages.
type genBuilder struct{ g *generator.Generator }

func (b genBuilder) Build(ctx context.Context, request string, progress func(agent.BuildStep)) (*agent.BuildResult, error) {
	var report func(generator.Event)
	if progress != nil {
		report = func(ev generator.Event) { progress(agent.BuildStep{Stage: ev.Stage, Message: ev.Message}) }
	}
	res, err := b.g.Build(ctx, generator.Request{Text: request}, report)
	if res == nil {
		return nil, err
	}
	if err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	return &agent.BuildResult{Action: string(res.Op), Tool: res.Tool, OK: res.OK, Version: res.Version,
		Attempts: res.Attempts, Error: res.Error, Summary: res.Summary}, nil
}

// openBench opens the benchmarks CSV for the server and the CLI alike, and
// says where an older file went if it had to be moved aside.
func openBench(cfg Config, log *slog.Logger) (*benchmarks.Logger, error) {
	bench, err := benchmarks.Open(cfg.Benchmarks)
	if err != nil {
		return nil, fmt.Errorf("benchmarks: %w", err)
	}
	if p := bench.Rotated(); p != "" {
		log.Warn("benchmarks: the CSV had an older header; moved it aside, unchanged", "to", p)
	}
	return bench, nil
}

// learnFromBenchmarks teaches the router what past chats in the benchmarks
// CSV at path ran tools for. A file that is missing teaches nothing; bad
// lines are skipped with a warning, since the rest is still good.
func learnFromBenchmarks(f *finder, path string, log *slog.Logger) {
	rows, err := benchmarks.ReadFile(path)
	if bad, ok := errors.AsType[*benchmarks.BadLinesError](err); ok {
		log.Warn("router: some benchmark rows were not read", "err", bad)
	} else if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			log.Warn("router: learned nothing from the benchmarks CSV", "err", err)
		}
		return
	}
	if n := f.learnFrom(rows); n > 0 {
		log.Info("router: learned from past requests", "requests", n, "from", path)
	}
}

// serve runs the HTTP server until ctx ends.
func serve(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	w, err := openWorld(ctx, cfg, getenv, log)
	if err != nil {
		return err
	}
	defer w.Close()
	bench, err := openBench(cfg, log)
	if err != nil {
		return err
	}
	defer bench.Close()
	stats := loadStats(bench, log)
	if cfg.Learn {
		learnFromBenchmarks(w.finder, bench.Path(), log)
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
			if err := w.finder.ix.EmbedPending(ctx); err != nil {
				log.Warn("tool embeddings failed; routing stays lexical", "err", err)
			}
		}()
	}
	srv := NewServer(Deps{Config: cfg, Agent: w.agent, Reg: w.reg, Runner: w.runner, Bench: bench, Stats: stats, Build: w.gen, MCP: mcpHTTPHandler(ctx, w), Hub: w.hub, Log: log})

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

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
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
	}
	if !cfg.Loopback() && cfg.AdminToken == "" {
		fmt.Fprintf(stdout, "warning: listening beyond loopback without ADAPTBOT_ADMIN_TOKEN: building, changing and running tools directly are refused (403); chat with existing tools works\n")
	}

	served := make(chan error, 1)
	go func() { served <- srv.app.Listener(ln) }()
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
