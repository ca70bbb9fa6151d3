package routereval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"adaptbot/router"
)

// Task is one line of a task file: a whole request, the annotator's steps
// (each a request for one capability), and the gold tool names.
type Task struct {
	ID    string   `json:"id"`
	Query string   `json:"query"`
	Steps []string `json:"steps"`
	Gold  []string `json:"gold"`
}

// ReadTasks decodes a JSON-lines task file.
func ReadTasks(r io.Reader) ([]Task, error) {
	var tasks []Task
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var t Task
		if err := json.Unmarshal([]byte(line), &t); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		tasks = append(tasks, t)
	}
	return tasks, sc.Err()
}

// RouteFunc ranks tools for a request, best first.
type RouteFunc func(query string, k int) []router.Hit

// System is a named router under evaluation.
type System struct {
	Name  string
	Route RouteFunc
}

// Metrics are one system's scores on a task set. Recall is averaged over
// tasks: the share of a task's distinct gold names found, a name counting as
// found when any tool of that name is returned (several servers share names).
type Metrics struct {
	System string `json:"system"`
	// RecallAt5 and RecallAt10 route the whole task as one query.
	RecallAt5  float64 `json:"recall_at_5"`
	RecallAt10 float64 `json:"recall_at_10"`
	// StepRecall routes each step as its own request and merges the top 3
	// of every step; StepAllFound is the share of tasks whose gold names
	// all came back that way.
	StepRecall   float64 `json:"step_top3_recall"`
	StepAllFound float64 `json:"step_top3_all_found"`
}

// Score measures route on tasks.
func Score(name string, route RouteFunc, tasks []Task) Metrics {
	m := Metrics{System: name}
	if len(tasks) == 0 {
		return m
	}
	for _, t := range tasks {
		top := route(t.Query, 10)
		m.RecallAt5 += recall(t.Gold, top[:min(5, len(top))])
		m.RecallAt10 += recall(t.Gold, top)
		var merged []router.Hit
		for _, s := range t.Steps {
			merged = append(merged, trim(route(s, 3), 3)...)
		}
		r := recall(t.Gold, merged)
		m.StepRecall += r
		if r == 1 {
			m.StepAllFound++
		}
	}
	n := float64(len(tasks))
	m.RecallAt5 /= n
	m.RecallAt10 /= n
	m.StepRecall /= n
	m.StepAllFound /= n
	return m
}

// recall is the share of the distinct gold names among hits.
func recall(gold []string, hits []router.Hit) float64 {
	want := map[string]bool{}
	for _, g := range gold {
		want[g] = true
	}
	if len(want) == 0 {
		return 1
	}
	found := map[string]bool{}
	for _, h := range hits {
		if want[h.Name] {
			found[h.Name] = true
		}
	}
	return float64(len(found)) / float64(len(want))
}

// Systems returns the routers the harness compares on docs: the router's
// three modes and the two baselines.
func Systems(docs []router.Doc, opts ...router.Option) []System {
	ix := router.Build(docs, opts...)
	mode := func(m router.Mode) RouteFunc {
		return func(q string, k int) []router.Hit { return ix.RouteMode(q, k, m) }
	}
	return []System{
		{"router fused (Route)", mode(router.Fused)},
		{"router flat", mode(router.Flat)},
		{"router hierarchical", mode(router.Hierarchical)},
		{"baseline: hierarchical TF-IDF", NewTFIDFHierarchy(docs).Route},
		{"baseline: BM25 name+description", NewPlainBM25(docs).Route},
	}
}

// Latency is the cost of Route at one catalog size.
type Latency struct {
	// Index names the index's options ("default").
	Index   string        `json:"index"`
	Tools   int           `json:"tools"`
	Queries int           `json:"queries"`
	Reps    int           `json:"reps"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	// StableP99 is the 99th percentile over requests of each request's
	// median time: the slow requests, without the scheduler noise of a
	// shared machine.
	StableP99 time.Duration `json:"stable_p99_ns"`
	Build     time.Duration `json:"build_ns"`
	// IndexBytes is the heap the index adds over the Docs it was built
	// from (live heap after a GC, before and after building).
	IndexBytes uint64 `json:"index_bytes"`
}

// ScaleDocs returns n docs made by replicating docs: copy r of server s is
// the server "s (replica r)", and each of its tools gets the suffix _v<r>, so
// every name is unique and every term's posting list grows with the copies
// (a harder case than a real catalog of the same size).
func ScaleDocs(docs []router.Doc, n int) []router.Doc {
	out := make([]router.Doc, 0, n)
	for r := 0; len(out) < n && len(docs) > 0; r++ {
		for _, d := range docs {
			if len(out) == n {
				break
			}
			if r > 0 {
				d.Server = fmt.Sprintf("%s (replica %d)", d.Server, r)
				d.Name = fmt.Sprintf("%s_v%d", d.Name, r)
			}
			out = append(out, d)
		}
	}
	return out
}

// MeasureLatency builds an index over docs (with opts) and times Route
// (k = 10) on each query, reps times after one warm-up pass. IndexBytes
// counts what the index allocates over the docs it is given (the docs'
// strings are shared, not copied).
func MeasureLatency(docs []router.Doc, queries []string, reps int, opts ...router.Option) Latency {
	var before, after runtime.MemStats
	// Two collections: an Index's sync.Pool keeps it reachable (through the
	// runtime's list of pools) until the second GC after its last use, and
	// the previous measurement's index must not be freed while this one is
	// being counted.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ix := router.Build(docs, opts...)
	build := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	l := Latency{Index: "default", Tools: ix.Len(), Queries: len(queries), Reps: reps, Build: build}
	if after.HeapAlloc > before.HeapAlloc {
		l.IndexBytes = after.HeapAlloc - before.HeapAlloc
	}
	for _, q := range queries {
		ix.Route(q, 10)
	}
	runtime.GC() // start timing without the build's garbage pending
	times := make([]time.Duration, 0, len(queries)*reps)
	perQuery := make([][]time.Duration, len(queries))
	for range reps {
		for i, q := range queries {
			t0 := time.Now()
			ix.Route(q, 10)
			d := time.Since(t0)
			times = append(times, d)
			perQuery[i] = append(perQuery[i], d)
		}
	}
	runtime.KeepAlive(ix)
	if len(times) == 0 {
		return l
	}
	l.P50 = percentile(times, 50)
	l.P99 = percentile(times, 99)
	medians := make([]time.Duration, len(queries))
	for i, ts := range perQuery {
		medians[i] = percentile(ts, 50)
	}
	l.StableP99 = percentile(medians, 99)
	return l
}

// percentile returns the p-th percentile of ts (nearest rank), sorting ts.
func percentile(ts []time.Duration, p int) time.Duration {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[min(len(ts)-1, len(ts)*p/100)]
}

// Report is the outcome of Evaluate.
type Report struct {
	Dataset string    `json:"dataset"`
	Tools   int       `json:"tools"`
	Tasks   int       `json:"tasks"`
	Steps   int       `json:"steps"`
	Systems []Metrics `json:"systems"`
	Latency []Latency `json:"latency,omitempty"`
	// Flows and PeerFlows are the model traffic of a one-tool answer
	// (CompareFlows), when measured.
	Flows     []FlowRow `json:"flows,omitempty"`
	PeerFlows []FlowRow `json:"peer_flows,omitempty"`
}

// CompareFlows measures AdaptBot's and the peer's model traffic for a
// one-tool answer at each catalog size, over the dataset in dir, running
// the peer from peerDir, and adds them to the report.
func (r *Report) CompareFlows(ctx context.Context, dir, peerDir string, sizes []int) error {
	docs, _, err := LoadDataset(dir)
	if err != nil {
		return err
	}
	if r.Flows, err = AdaptBotFlows(ctx, docs, sizes); err != nil {
		return err
	}
	r.PeerFlows, err = PeerFlows(ctx, peerDir, dir, sizes)
	return err
}

// LoadDataset reads catalog.json and queries.jsonl from dir.
func LoadDataset(dir string) ([]router.Doc, []Task, error) {
	docs, err := router.LoadCatalog(filepath.Join(dir, "catalog.json"))
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	tasks, err := ReadTasks(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return docs, tasks, nil
}

// Evaluate scores every System on the dataset in dir and, when sizes is not
// empty, measures Route's latency at each catalog size (scaled with
// ScaleDocs; 0 means the catalog as it is), timing each of the dataset's queries and steps reps times.
func Evaluate(dir string, sizes []int, reps int) (*Report, error) {
	docs, tasks, err := LoadDataset(dir)
	if err != nil {
		return nil, err
	}
	r := &Report{Dataset: dir, Tools: len(docs), Tasks: len(tasks)}
	var queries []string
	for _, t := range tasks {
		r.Steps += len(t.Steps)
		queries = append(queries, t.Query)
		queries = append(queries, t.Steps...)
	}
	for _, s := range Systems(docs) {
		r.Systems = append(r.Systems, Score(s.Name, s.Route, tasks))
	}
	for _, n := range sizes {
		if n == 0 {
			n = len(docs)
		}
		scaled := ScaleDocs(docs, n)
		r.Latency = append(r.Latency, MeasureLatency(scaled, queries, reps))
	}
	return r, nil
}

// row is m as a line of the recall table.
func (m Metrics) row() string {
	return fmt.Sprintf("| %s | %.3f | %.3f | %.3f | %.3f |\n", m.System, m.RecallAt5, m.RecallAt10, m.StepRecall, m.StepAllFound)
}

// WriteText writes the report as Markdown tables.
func (r *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "dataset %s: %d tools, %d tasks, %d steps\n\n", r.Dataset, r.Tools, r.Tasks, r.Steps)
	fmt.Fprintf(b, "| system | recall@5 | recall@10 | per-step top-3 recall | per-step all found |\n")
	fmt.Fprintf(b, "|---|---|---|---|---|\n")
	for _, m := range r.Systems {
		b.WriteString(m.row())
	}
	if len(r.Latency) > 0 {
		fmt.Fprintf(b, "\n| index | tools | requests ×reps | Route p50 | Route p99 | p99 of per-request medians | build | index heap |\n")
		fmt.Fprintf(b, "|---|---|---|---|---|---|---|---|\n")
		us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
		for _, l := range r.Latency {
			fmt.Fprintf(b, "| %s | %d | %d ×%d | %s | %s | %s | %s | %.1f MiB |\n", l.Index, l.Tools, l.Queries, l.Reps, us(l.P50),
				us(l.P99), us(l.StableP99), l.Build.Round(time.Millisecond), float64(l.IndexBytes)/(1<<20))
		}
	}
	if len(r.Flows) > 0 {
		b.WriteString("\n")
		WriteFlows(b, r.Flows, r.PeerFlows)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// trim keeps the first k hits.
func trim(h []router.Hit, k int) []router.Hit {
	if len(h) > k {
		return h[:k]
	}
	return h
}

// sortHits orders hits best first, ties by server and name, as the router
// does.
func sortHits(h []router.Hit) {
	sort.Slice(h, func(i, j int) bool {
		if h[i].Score != h[j].Score {
			return h[i].Score > h[j].Score
		}
		if h[i].Server != h[j].Server {
			return h[i].Server < h[j].Server
		}
		return h[i].Name < h[j].Name
	})
}
