package routereval

import (
	"fmt"
	"sync"
	"testing"

	"adaptbot/router"
)

// benchData loads the shared dataset once for all benchmarks.
var benchData = sync.OnceValues(func() ([]router.Doc, []string) {
	docs, tasks, err := LoadDataset(datasetPath)
	if err != nil {
		return nil, nil
	}
	var queries []string
	for _, t := range tasks {
		queries = append(queries, t.Query)
		queries = append(queries, t.Steps...)
	}
	return docs, queries
})

func benchRoute(b *testing.B, n int) {
	benchRouteAfter(b, n, nil)
}

// benchRouteAfter is benchRoute with prepare run on the built index first.
func benchRouteAfter(b *testing.B, n int, prepare func(ix *router.Index, docs []router.Doc, queries []string)) {
	datasetDir(b)
	docs, queries := benchData()
	docs = ScaleDocs(docs, n)
	ix := router.Build(docs)
	if prepare != nil {
		prepare(ix, docs, queries)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ix.Route(queries[i%len(queries)], 10)
		i++
	}
}

// BenchmarkRoute527 routes the dataset's tasks and steps over its 527 tools.
func BenchmarkRoute527(b *testing.B) { benchRoute(b, 527) }

// BenchmarkRoute10k routes them over the catalog scaled to 10,000 tools.
func BenchmarkRoute10k(b *testing.B) { benchRoute(b, 10000) }

// BenchmarkRoute10kLearned is BenchmarkRoute10k after every tool has
// learned its full LearnedPerTool requests, drawn from the dataset's tasks
// and steps: the most a memory holds.
func BenchmarkRoute10kLearned(b *testing.B) {
	benchRouteAfter(b, 10000, func(ix *router.Index, docs []router.Doc, queries []string) {
		for i, d := range docs {
			for j := range router.LearnedPerTool {
				ix.Learn(d.Server, d.Name, queries[(i*router.LearnedPerTool+j)%len(queries)])
			}
		}
	})
}

// BenchmarkUpsert replaces tools one at a time in a 10,000-tool index, each
// with a changed description, so every call updates postings and its domain.
func BenchmarkUpsert(b *testing.B) {
	datasetDir(b)
	docs, _ := benchData()
	all := ScaleDocs(docs, 10000)
	ix := router.Build(all)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		d := all[i%len(all)]
		d.Description = fmt.Sprintf("%s (revision %d)", d.Description, i)
		ix.Upsert(d)
		i++
	}
}
