package router

import (
	"fmt"
	"sync"
	"testing"
)

// benchData loads the shared dataset once for all benchmarks.
var benchData = sync.OnceValues(func() ([]Doc, []string) {
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

func benchRoute(b *testing.B, n int, opts ...Option) {
	benchRouteAfter(b, n, nil, opts...)
}

// benchRouteAfter is benchRoute with prepare run on the built index first.
func benchRouteAfter(b *testing.B, n int, prepare func(ix *Index, docs []Doc, queries []string), opts ...Option) {
	datasetDir(b)
	docs, queries := benchData()
	docs = ScaleDocs(docs, n)
	ix := Build(docs, opts...)
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
// learned its full 20 requests (Learn), drawn from the dataset's tasks and
// steps: the most a memory holds.
func BenchmarkRoute10kLearned(b *testing.B) {
	benchRouteAfter(b, 10000, func(ix *Index, docs []Doc, queries []string) {
		for i, d := range docs {
			for j := range maxLearned {
				ix.Learn(d.Server, d.Name, queries[(i*maxLearned+j)%len(queries)])
			}
		}
	})
}

// BenchmarkRoute10kLSA is BenchmarkRoute10k with the latent semantic
// signal on (WithLSA(128)).
func BenchmarkRoute10kLSA(b *testing.B) { benchRoute(b, 10000, WithLSA(lsaEvalDims)) }

// BenchmarkUpsert replaces tools one at a time in a 10,000-tool index, each
// with a changed description, so every call updates postings and its domain.
func BenchmarkUpsert(b *testing.B) { benchUpsert(b) }

// BenchmarkUpsertLSA is BenchmarkUpsert with the latent semantic signal on:
// each call also folds the tool into the existing basis. The replacements
// are counted as changes, so a background basis starts after 10,000 calls.
func BenchmarkUpsertLSA(b *testing.B) { benchUpsert(b, WithLSA(lsaEvalDims)) }

func benchUpsert(b *testing.B, opts ...Option) {
	datasetDir(b)
	docs, _ := benchData()
	all := ScaleDocs(docs, 10000)
	ix := Build(all, opts...)
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

// BenchmarkRefreshSemantic10k recomputes the latent basis (WithLSA(128)) of
// a 10,000-tool index and refolds every tool: the work a background
// recomputation does.
func BenchmarkRefreshSemantic10k(b *testing.B) {
	datasetDir(b)
	docs, _ := benchData()
	ix := Build(ScaleDocs(docs, 10000), WithLSA(lsaEvalDims))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ix.RefreshSemantic()
	}
}
