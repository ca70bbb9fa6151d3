package telemetry

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"adaptbot/llm"
)

// Other is the label value that stands for every value past a label's cap,
// and for names that cannot be labels (too long, not UTF-8) or that name
// nothing (a tool that was not found).
const Other = "other"

// MaxToolLabels caps the distinct tool names (and request paths, which
// are mostly tool names) that become label values; later ones are counted
// as Other. Tools are made at run time, by models and people, so without
// a cap every new tool would add series for good.
const MaxToolLabels = 100

// maxSmallLabels caps labels whose values come from a short list in the
// code (doors, intents, outcomes, actions, providers, models): a bug that
// sent free text there would still not grow the series without bound.
const maxSmallLabels = 32

// maxLabelLen is the longest label value kept; a longer one is Other.
const maxLabelLen = 128

// Metrics are AdaptBot's Prometheus metrics, on a registry of their own
// (never the global one): requests, model calls and tokens, tool calls,
// builds, the sandbox's workers, the cluster's rows, and the Go runtime.
// A nil *Metrics counts nothing, so that code can hold one without asking
// whether metrics are on.
type Metrics struct {
	reg *prometheus.Registry

	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	modelCalls     *prometheus.CounterVec
	modelTokens    *prometheus.CounterVec
	modelSeconds   *prometheus.HistogramVec
	toolCalls      *prometheus.CounterVec
	toolSeconds    *prometheus.HistogramVec
	builds         *prometheus.CounterVec
	buildSeconds   *prometheus.HistogramVec

	names                                                *labelSet // tools and paths
	doors, intents, outcomes, actions, providers, models *labelSet

	requestSeries seriesCache[requestKey, requestSeries]
	toolSeries    seriesCache[toolKey, toolSeries]
	modelSeries   seriesCache[modelKey, modelSeries]
}

// NewMetrics makes the metrics and their registry, with the Go runtime's
// and the process's collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptbot_requests_total",
			Help: "Requests carried out, by door (http, mcp, cli, internal), intent (CHAT, BUILD, RUN), path (general, need_tool, a tool, build_create, ...) and outcome (ok or the error kind).",
		}, []string{"door", "intent", "path", "outcome"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "adaptbot_request_duration_seconds",
			Help:    "Time to carry out a request, by door and intent.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"door", "intent"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptbot_model_calls_total",
			Help: "Model calls (after the provider layer's retries), by provider, model and outcome (ok, overloaded, timeout, failed, cancelled).",
		}, []string{"provider", "model", "outcome"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptbot_model_tokens_total",
			Help: "Tokens the provider reported, by provider, model and type (input or output).",
		}, []string{"provider", "model", "type"}),
		modelSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "adaptbot_model_call_duration_seconds",
			Help:    "Time of one model call, retries included, by provider and model.",
			Buckets: []float64{.01, .02, .04, .08, .16, .32, .64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92},
		}, []string{"provider", "model"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptbot_tool_calls_total",
			Help: "Tool calls from every door, nested calls included, by tool and outcome (ok, invalid_arguments, the sandbox's kind of failure, error, cancelled).",
		}, []string{"tool", "outcome"}),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "adaptbot_tool_call_duration_seconds",
			Help:    "Time of one tool call, argument validation included, by tool.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"tool"}),
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "adaptbot_builds_total",
			Help: "Builds, by action (create, modify, delete, rollback, ...) and outcome (ok or the error kind).",
		}, []string{"action", "outcome"}),
		buildSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "adaptbot_build_duration_seconds",
			Help:    "Time of one build, every attempt included, by action.",
			Buckets: []float64{.1, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}, []string{"action"}),
		names:     newLabelSet(MaxToolLabels),
		doors:     newLabelSet(maxSmallLabels),
		intents:   newLabelSet(maxSmallLabels),
		outcomes:  newLabelSet(maxSmallLabels),
		actions:   newLabelSet(maxSmallLabels),
		providers: newLabelSet(maxSmallLabels),
		models:    newLabelSet(maxSmallLabels),
	}
	m.reg.MustRegister(m.requests, m.requestSeconds, m.modelCalls, m.modelTokens, m.modelSeconds,
		m.toolCalls, m.toolSeconds, m.builds, m.buildSeconds,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format. The route that
// mounts it decides who may read them.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, MaxRequestsInFlight: 4, Timeout: 10 * time.Second})
}

// Registry returns the registry, for a test or a collector of the caller's.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Request counts one request carried out through door ("http", "mcp",
// "cli", "internal"), with its intent, path and outcome ("ok", or the
// service's error kind), and its time. The service layer calls it once per
// request, where it writes the request's benchmark row. A path that names
// nothing (outcome not_found) is counted as Other.
func (m *Metrics) Request(door, intent, path, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	s := m.requestSeries.get(requestKey{door, intent, path, outcome}, func() (requestSeries, bool) {
		fp := Other // a name that names nothing takes no slot of the cap
		if outcome != "not_found" {
			fp = m.names.fold(path)
		}
		fd, fi, fo := m.doors.fold(door), m.intents.fold(intent), m.outcomes.fold(outcome)
		return requestSeries{m.requests.WithLabelValues(fd, fi, fp, fo), m.requestSeconds.WithLabelValues(fd, fi)},
			fd == door && fi == intent && fp == path && fo == outcome
	})
	s.count.Inc()
	s.seconds.Observe(d.Seconds())
}

// ToolCall counts one call of tool with its outcome and time. A tool that
// was not found is counted as Other. Tool calls are counted where they
// happen (StartTool, through the toolbox), so the service layer need not
// call it.
func (m *Metrics) ToolCall(tool, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	s := m.toolSeries.get(toolKey{tool, outcome}, func() (toolSeries, bool) {
		ft, fo := Other, m.outcomes.fold(outcome)
		if outcome != "not_found" {
			ft = m.names.fold(tool)
		}
		return toolSeries{m.toolCalls.WithLabelValues(ft, fo), m.toolSeconds.WithLabelValues(ft)}, ft == tool && fo == outcome
	})
	s.count.Inc()
	s.seconds.Observe(d.Seconds())
}

// Build counts one build, modify, delete or other change of a tool
// (action), with its outcome and time. The service layer calls it.
func (m *Metrics) Build(action, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	fa, fo := m.actions.fold(action), m.outcomes.fold(outcome)
	m.builds.WithLabelValues(fa, fo).Inc()
	m.buildSeconds.WithLabelValues(fa).Observe(d.Seconds())
}

// ModelCall counts one model call and its tokens. The model WrapModel
// returns calls it.
func (m *Metrics) ModelCall(provider, model, outcome string, u llm.Usage, d time.Duration) {
	if m == nil {
		return
	}
	s := m.modelSeries.get(modelKey{provider, model, outcome}, func() (modelSeries, bool) {
		fp, fm, fo := m.providers.fold(provider), m.models.fold(model), m.outcomes.fold(outcome)
		return modelSeries{
			calls:   m.modelCalls.WithLabelValues(fp, fm, fo),
			input:   m.modelTokens.WithLabelValues(fp, fm, "input"),
			output:  m.modelTokens.WithLabelValues(fp, fm, "output"),
			seconds: m.modelSeconds.WithLabelValues(fp, fm),
		}, fp == provider && fm == model && fo == outcome
	})
	s.calls.Inc()
	if u.PromptTokens > 0 {
		s.input.Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		s.output.Add(float64(u.CompletionTokens))
	}
	s.seconds.Observe(d.Seconds())
}

// The series one call updates, found once per distinct set of labels:
// looking a series up by its label values (hashing them, taking the
// vector's lock) costs more than updating it.
type (
	requestKey    struct{ door, intent, path, outcome string }
	requestSeries struct {
		count   prometheus.Counter
		seconds prometheus.Observer
	}
	toolKey    struct{ tool, outcome string }
	toolSeries struct {
		count   prometheus.Counter
		seconds prometheus.Observer
	}
	modelKey    struct{ provider, model, outcome string }
	modelSeries struct {
		calls, input, output prometheus.Counter
		seconds              prometheus.Observer
	}
)

// seriesCache holds the series of the label values seen. Only values that
// became labels unchanged are kept, so that names folded into Other (past
// a cap, unknown, malformed) never grow it.
type seriesCache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// get returns k's series, made by build on the first call; build also
// says whether to keep them.
func (c *seriesCache[K, V]) get(k K, build func() (V, bool)) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v, keep := build()
	if keep {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[K]V{}
		}
		c.m[k] = v
		c.mu.Unlock()
	}
	return v
}

// used is the Metrics that StartTool counts tool calls in.
var used atomic.Pointer[Metrics]

// Use makes m the metrics that instrumented packages count in where they
// have no *Metrics of their own: the toolbox's tool calls, nested calls
// included. The server calls it once, at start; restore puts back what was
// there before.
func Use(m *Metrics) (restore func()) {
	prev := used.Swap(m)
	return func() { used.Store(prev) }
}

// SandboxStats is what the sandbox metrics read from the sandbox runner:
// its configured size, live and busy workers, and counts of replaced
// workers and failed starts.
type SandboxStats struct {
	Size, Live, Busy        int
	Restarts, StartFailures int64
}

// WatchSandbox adds the sandbox's worker metrics, read from stats at each
// scrape (the runner's Stats, turned into a SandboxStats). Call it once.
func (m *Metrics) WatchSandbox(stats func() SandboxStats) error {
	return m.reg.Register(&funcCollector{descs: sandboxDescs, collect: func(ch chan<- prometheus.Metric) {
		s := stats()
		ch <- prometheus.MustNewConstMetric(sandboxDescs[0], prometheus.GaugeValue, float64(s.Size))
		ch <- prometheus.MustNewConstMetric(sandboxDescs[1], prometheus.GaugeValue, float64(s.Live))
		ch <- prometheus.MustNewConstMetric(sandboxDescs[2], prometheus.GaugeValue, float64(s.Busy))
		ch <- prometheus.MustNewConstMetric(sandboxDescs[3], prometheus.CounterValue, float64(s.Restarts))
		ch <- prometheus.MustNewConstMetric(sandboxDescs[4], prometheus.CounterValue, float64(s.StartFailures))
	}})
}

var sandboxDescs = []*prometheus.Desc{
	prometheus.NewDesc("adaptbot_sandbox_workers", "Worker processes the sandbox is configured to keep.", nil, nil),
	prometheus.NewDesc("adaptbot_sandbox_workers_live", "Worker processes running.", nil, nil),
	prometheus.NewDesc("adaptbot_sandbox_workers_busy", "Worker processes serving a call.", nil, nil),
	prometheus.NewDesc("adaptbot_sandbox_worker_restarts_total", "Workers replaced after a timeout, crash, limit or leaked goroutine.", nil, nil),
	prometheus.NewDesc("adaptbot_sandbox_worker_start_failures_total", "Worker starts that failed.", nil, nil),
}

// ClusterStats is what the cluster metrics read: whether NATS is
// connected, and the benchmark rows waiting in the spool or dropped.
type ClusterStats struct {
	Connected        bool
	Spooled, Dropped int
}

// WatchCluster adds the cluster's metrics, read from stats at each scrape.
// Call it once, in a cluster only.
func (m *Metrics) WatchCluster(stats func() ClusterStats) error {
	return m.reg.Register(&funcCollector{descs: clusterDescs, collect: func(ch chan<- prometheus.Metric) {
		s := stats()
		connected := 0.0
		if s.Connected {
			connected = 1
		}
		ch <- prometheus.MustNewConstMetric(clusterDescs[0], prometheus.GaugeValue, connected)
		ch <- prometheus.MustNewConstMetric(clusterDescs[1], prometheus.GaugeValue, float64(s.Spooled))
		ch <- prometheus.MustNewConstMetric(clusterDescs[2], prometheus.CounterValue, float64(s.Dropped))
	}})
}

var clusterDescs = []*prometheus.Desc{
	prometheus.NewDesc("adaptbot_cluster_nats_connected", "1 while this replica is connected to NATS, else 0.", nil, nil),
	prometheus.NewDesc("adaptbot_cluster_rows_spooled", "Benchmark rows waiting in the spool for NATS.", nil, nil),
	prometheus.NewDesc("adaptbot_cluster_rows_dropped_total", "Benchmark rows dropped because the spool was full.", nil, nil),
}

// funcCollector reports metrics read by a function at scrape time.
type funcCollector struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// labelSet bounds the values one label takes: the first max distinct
// values are kept, later ones become Other.
type labelSet struct {
	mu   sync.RWMutex
	seen map[string]struct{}
	max  int
}

func newLabelSet(max int) *labelSet {
	return &labelSet{seen: map[string]struct{}{}, max: max}
}

// fold returns v, or Other when v is past the cap or cannot be a label.
func (l *labelSet) fold(v string) string {
	if v == Other || len(v) > maxLabelLen || !utf8.ValidString(v) {
		return Other
	}
	l.mu.RLock()
	_, ok := l.seen[v]
	full := len(l.seen) >= l.max
	l.mu.RUnlock()
	switch {
	case ok:
		return v
	case full:
		return Other
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; !ok {
		if len(l.seen) >= l.max {
			return Other
		}
		l.seen[v] = struct{}{}
	}
	return v
}
