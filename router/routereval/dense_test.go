package routereval

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"adaptbot/router"
)

// embedServer starts the Node helper, skipping without it on a developer's
// machine and failing without it under CI=true or
// ADAPTBOT_REQUIRE_EMBEDSERVER=1 (which .ci/run sets after npm ci).
func embedServer(t *testing.T) *EmbedServer {
	t.Helper()
	if err := EmbedServerReady(EmbedServerDir); err != nil {
		if os.Getenv("ADAPTBOT_REQUIRE_EMBEDSERVER") == "1" || os.Getenv("CI") == "true" {
			t.Fatalf("the embedding helper is required here: %v", err)
		}
		t.Skipf("embedding helper not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartEmbedServer(ctx, EmbedServerDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cached embeds every text it will be asked for in batches up front, so an
// evaluation that routes each request twice embeds it once.
type cached struct {
	vecs map[string][]float32
	e    router.Embedder
}

func newCached(t *testing.T, e router.Embedder, texts []string) *cached {
	t.Helper()
	vecs, err := e.EmbedDocuments(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	c := &cached{vecs: map[string][]float32{}, e: e}
	for i, s := range texts {
		c.vecs[s] = vecs[i]
	}
	return c
}

func (c *cached) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []string
	for i, s := range texts {
		if v, ok := c.vecs[s]; ok {
			out[i] = v
		} else {
			miss = append(miss, s)
		}
	}
	if len(miss) > 0 {
		vecs, err := c.e.EmbedDocuments(ctx, miss)
		if err != nil {
			return nil, err
		}
		for i, s := range miss {
			c.vecs[s] = vecs[i]
		}
		return c.EmbedDocuments(ctx, texts)
	}
	return out, nil
}

func (c *cached) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := c.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

// TestDenseSignals measures the router with Universal Sentence Encoder lite
// on the endpoint (the full model, served by embedserver/server.js) beside
// the lexical router, on LiveMCPBench. Run with -v for the table.
func TestDenseSignals(t *testing.T) {
	dir := datasetDir(t)
	srv := embedServer(t)
	docs, tasks, err := LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, tk := range tasks {
		queries = append(queries, tk.Query)
		queries = append(queries, tk.Steps...)
	}
	full := HTTPEmbedder{URL: srv.URL}
	// The model must mean something before its figures do.
	vs, err := full.EmbedDocuments(context.Background(), []string{"will it rain tomorrow", "weather forecast for a city", "delete a file from the disk"})
	if err != nil {
		t.Fatal(err)
	}
	if cos(vs[0], vs[1]) <= cos(vs[0], vs[2]) {
		t.Errorf("the full model puts rain nearer deleting files (%.3f) than the weather (%.3f)", cos(vs[0], vs[2]), cos(vs[0], vs[1]))
	}
	systems := []struct {
		name string
		e    router.Embedder
	}{{"Route, lexical (the default)", nil}, {"Route + USE lite on the endpoint (WithEmbedder)", newCached(t, full, append(denseTexts(docs), queries...))}}
	var b strings.Builder
	b.WriteString("| system | recall@5 | recall@10 | per-step top-3 recall | per-step all found |\n|---|---|---|---|---|\n")
	var lexical Metrics
	var ms []Metrics
	for i, s := range systems {
		var opts []router.Option
		if s.e != nil {
			opts = append(opts, router.WithEmbedder(s.e))
		}
		ix := router.Build(docs, opts...)
		if err := ix.EmbedPending(context.Background()); err != nil {
			t.Fatal(err)
		}
		m := Score(s.name, func(q string, k int) []router.Hit { return ix.Route(q, k) }, tasks)
		if i == 0 {
			lexical = m
		}
		ms = append(ms, m)
		b.WriteString(m.row())
	}
	t.Logf("\n%s", b.String())
	// What the README says of the full model: it never costs recall, and
	// adds a little on whole tasks (0.416 → 0.430 recall@5 when measured).
	if withModel := ms[1]; withModel.RecallAt5 < lexical.RecallAt5 || withModel.StepRecall < lexical.StepRecall-0.01 {
		t.Errorf("the full model lowers recall: %+v against %+v", withModel, lexical)
	}
}

func cos(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / (math.Sqrt(na*nb) + 1e-12)
}

// denseTexts are the texts the router embeds for docs.
func denseTexts(docs []router.Doc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = router.EmbedText(d)
	}
	return out
}
