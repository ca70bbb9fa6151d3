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

// rrfK is the reciprocal-rank-fusion constant of Cormack, Clarke and
// Büttcher (2009); rank-based fusion needs no calibration between BM25 and
// cosine scores.
const rrfK = 60

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

// routeDense fuses the lexical ranking in mode m with cosine similarity by
// reciprocal rank. Any embedding failure returns the lexical ranking, and
// keeps returning it for retryAfter.
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
	sc := make([]float64, len(ix.tools))
	var ids []int32
	for id, v := range d.vecs {
		if len(v) != len(qv) {
			continue
		}
		var dot float64
		for i := range v {
			dot += float64(v[i]) * float64(qv[i])
		}
		// Shift cosine into (0, 2] so topK's ids all carry a positive score.
		sc[id] = dot + 1 + 1e-9
		ids = append(ids, id)
	}
	top := topK(ids, sc, pool)
	dense := make([]Hit, len(top))
	for i, id := range top {
		dense[i] = Hit{Server: ix.tools[id].doc.Server, Name: ix.tools[id].doc.Name, Score: sc[id] - 1}
	}
	ix.mu.RUnlock()
	return trim(fuseRRF(lex, dense), k)
}

// fuseRRF merges ranked lists by summed reciprocal rank, best first.
func fuseRRF(lists ...[]Hit) []Hit {
	score := map[docKey]float64{}
	var order []docKey
	for _, l := range lists {
		for r, h := range l {
			key := docKey{h.Server, h.Name}
			if _, ok := score[key]; !ok {
				order = append(order, key)
			}
			score[key] += 1 / float64(rrfK+r+1)
		}
	}
	out := make([]Hit, len(order))
	for i, key := range order {
		out[i] = Hit{Server: key.server, Name: key.name, Score: score[key]}
	}
	sortHits(out)
	return out
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
