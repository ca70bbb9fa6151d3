package router

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Embedder turns text into dense vectors. It is declared here, where it is
// used, and implemented elsewhere (over langchaingo's embeddings).
type Embedder interface {
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// denseWeight is the share of the embedding's cosine in a tool's score: the
// cosine is scaled so that the catalog's mean counts 0 and the best tool 1
// (as the lexical score is scaled to its best), times denseWeight, and
// added. 0.3 is the share the other added signals have (the domain's score,
// name coverage), set before measuring. Reciprocal-rank fusion, which gave
// the embedding an equal vote, was measured with the one model that runs
// here (Universal Sentence Encoder lite, router/README.md) and cost 0.06
// recall@5 and 0.10 per step; at this share the same model costs nothing,
// and a stronger one still adds what the words miss.
const denseWeight = 0.3

// retryAfter is how long Route stays lexical after an embedding call fails,
// so that a model that is down does not cost every request a failed call.
const retryAfter = 30 * time.Second

// denseState holds tool vectors. vecs and gen are guarded by Index.mu.
type denseState struct {
	emb       Embedder
	embedMu   sync.Mutex   // one refresh at a time, so concurrent routes do not embed twice
	downUntil atomic.Int64 // unix nanoseconds; dense scoring is skipped before it
	vecs      map[int32][]float32
	gen       map[int32]uint64 // bumped when a tool changes, to drop stale vectors
}

// failed records an embedding failure and returns err.
func (d *denseState) failed(err error) error {
	d.downUntil.Store(time.Now().Add(retryAfter).UnixNano())
	return err
}

// up reports whether the embedder may be called.
func (d *denseState) up() bool { return time.Now().UnixNano() >= d.downUntil.Load() }

func newDenseState(e Embedder) *denseState {
	return &denseState{emb: e, vecs: map[int32][]float32{}, gen: map[int32]uint64{}}
}

// invalidate forgets tool id's vector; the caller holds Index.mu for writing.
func (d *denseState) invalidate(id int32) {
	delete(d.vecs, id)
	d.gen[id]++
}

// EmbedText is the text a tool is embedded as, by the Embedder.
func EmbedText(d Doc) string {
	s := d.Name + ": " + d.Description + "\nDomain: " + DomainName(d.Server)
	if d.ServerDescription != "" {
		s += ". " + d.ServerDescription
	}
	return s
}

// EmbedPending embeds every tool that has no vector yet (all of them after a
// bulk load; the changed ones after Upserts). Route does this itself before
// its first dense scoring; calling it ahead, say after loading the registry,
// keeps that cost off the first request. Without an Embedder it does nothing.
func (ix *Index) EmbedPending(ctx context.Context) error {
	if ix.dense == nil {
		return nil
	}
	return ix.refresh(ctx)
}

// refresh embeds the tools that have no vector yet.
func (ix *Index) refresh(ctx context.Context) error {
	d := ix.dense
	d.embedMu.Lock()
	defer d.embedMu.Unlock()
	var ids []int32
	var gens []uint64
	var texts []string
	ix.mu.RLock()
	for id, t := range ix.tools {
		if t == nil {
			continue
		}
		if _, ok := d.vecs[int32(id)]; !ok {
			ids = append(ids, int32(id))
			gens = append(gens, d.gen[int32(id)])
			texts = append(texts, EmbedText(t.doc))
		}
	}
	ix.mu.RUnlock()
	if len(ids) == 0 {
		return nil
	}
	vecs, err := d.emb.EmbedDocuments(ctx, texts)
	if err != nil {
		return d.failed(fmt.Errorf("router: embed %d tools: %w", len(texts), err))
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i, id := range ids {
		if i < len(vecs) && ix.tools[id] != nil && d.gen[id] == gens[i] {
			d.vecs[id] = normalize(vecs[i])
		}
	}
	return nil
}

// routeDense adds cosine similarity, at denseWeight, to the lexical ranking
// in mode m. Any embedding failure returns the lexical ranking, and keeps
// returning it for retryAfter.
func (ix *Index) routeDense(ctx context.Context, query string, k int, m Mode) []Hit {
	pool := max(50, 4*k)
	lex := ix.lexical(query, pool, m)
	d := ix.dense
	if !d.up() || ix.refresh(ctx) != nil {
		return trim(lex, k)
	}
	qv, err := d.emb.EmbedQuery(ctx, query)
	if err != nil || len(qv) == 0 {
		d.failed(err)
		return trim(lex, k)
	}
	qv = normalize(qv)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var sum, best float64
	cos := make(map[int32]float64, len(d.vecs))
	for id, v := range d.vecs {
		if len(v) != len(qv) {
			continue
		}
		var dot float64
		for i := range v {
			dot += float64(v[i]) * float64(qv[i])
		}
		cos[id] = dot
		sum += dot
		best = max(best, dot)
	}
	if len(cos) == 0 {
		return trim(lex, k)
	}
	mean := sum / float64(len(cos))
	if best <= mean {
		return trim(lex, k)
	}
	score := make(map[docKey]float64, len(lex)+len(cos))
	for _, h := range lex {
		score[docKey{h.Server, h.Name}] = h.Score
	}
	for id, c := range cos {
		if x := (c - mean) / (best - mean); x > 0 {
			t := ix.tools[id].doc
			score[docKey{t.Server, t.Name}] += denseWeight * x
		}
	}
	out := make([]Hit, 0, len(score))
	for key, sc := range score {
		out = append(out, Hit{Server: key.server, Name: key.name, Score: sc})
	}
	sortHits(out)
	return trim(out, k)
}

// normalize scales v to unit length (a zero vector stays zero).
func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

func trim(h []Hit, k int) []Hit {
	if len(h) > k {
		return h[:k]
	}
	return h
}

// sortHits orders hits best first, ties by server and name.
func sortHits(h []Hit) {
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
