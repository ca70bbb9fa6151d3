package router

import (
	"context"
	"sort"
)

// Route returns the k tools best suited to query, best first, using the
// Fused ranking (and dense scores when an Embedder is configured).
func (ix *Index) Route(query string, k int) []Hit {
	return ix.RouteContext(context.Background(), query, k, Fused)
}

// RouteMode is Route with a chosen ranking mode.
func (ix *Index) RouteMode(query string, k int, m Mode) []Hit {
	return ix.RouteContext(context.Background(), query, k, m)
}

// RouteContext is RouteMode with a context for the Embedder's calls. Without
// an Embedder it never waits on anything but the index's lock. A request
// written as an expression (arithmetic, a unit conversion, date arithmetic)
// is routed with words that name what it asks for (shape.go).
func (ix *Index) RouteContext(ctx context.Context, query string, k int, m Mode) []Hit {
	if k <= 0 {
		return nil
	}
	if w := shapeWords(query); w != "" {
		query += "\n" + w
	}
	if ix.dense == nil {
		return ix.lexical(query, k, m)
	}
	return ix.routeDense(ctx, query, k, m)
}

// scratch is per-query working memory, pooled so that a query allocates
// little beyond its result. Score slices are indexed by document id and kept
// zeroed between queries by clearing only the ids a query touched.
type scratch struct {
	tool    []float64
	dom     []float64
	touched []int32
	dtouch  []int32
}

func (ix *Index) getScratch() *scratch {
	s, _ := ix.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	s.tool = grow(s.tool, len(ix.ti.lens))
	s.dom = grow(s.dom, len(ix.di.lens))
	s.touched = s.touched[:0]
	s.dtouch = s.dtouch[:0]
	return s
}

func (ix *Index) putScratch(s *scratch) {
	for _, id := range s.touched {
		s.tool[id] = 0
	}
	for _, id := range s.dtouch {
		s.dom[id] = 0
	}
	ix.scratch.Put(s)
}

// grow returns b resized to n, allocating a zeroed slice when b is too small.
func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

// lexical ranks without dense scores.
func (ix *Index) lexical(query string, k int, m Mode) []Hit {
	raw := queryTerms(query)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	q := ix.resolve(raw)
	if ix.ti.n == 0 || len(q) == 0 && ix.mem.n == 0 {
		return nil
	}
	s := ix.getScratch()
	defer ix.putScratch(s)
	s.touched = ix.ti.score(q, &ix.cfg.tool, s.tool, s.touched)
	best := maxScore(s.touched, s.tool)
	switch {
	case m == Hierarchical:
		if best == 0 {
			return nil
		}
		return ix.hierarchical(q, k, s, best)
	case best == 0:
		// No tool's text matches; what was learned still may.
	case m == Flat:
		for _, id := range s.touched {
			s.tool[id] /= best
		}
	default:
		s.dtouch = ix.di.score(q, &ix.cfg.domainOwn, s.dom, s.dtouch)
		bestDom := maxScore(s.dtouch, s.dom)
		for _, id := range s.touched {
			s.tool[id] /= best
			if bestDom > 0 {
				s.tool[id] += ix.cfg.beta * s.dom[ix.tools[id].dom] / bestDom
			}
		}
	}
	s.touched = ix.mem.scores(raw, s.tool, s.touched, ix.cfg.memory)
	if len(s.touched) == 0 {
		return nil
	}
	ids := topK(s.touched, s.tool, max(ix.cfg.pool, 4*k))
	ix.addNameCoverage(q, ids, s.tool)
	ids = topK(ids, s.tool, k)
	return ix.hits(ids, s.tool)
}

// resolve replaces each query term that no tool contains by its nearest
// indexed spelling, at a lower weight, and drops it when there is none.
func (ix *Index) resolve(q []qterm) []qterm {
	// A pasted blob (base64, a hash) yields thousands of unknown terms;
	// looking up the first few is enough for a request's typos.
	const maxLookups = 16
	out := make([]qterm, 0, len(q))
	seen := make(map[string]bool, len(q))
	for _, qt := range q {
		seen[qt.t] = true
	}
	lookups := 0
	for _, qt := range q {
		if _, ok := ix.ti.post[qt.t]; ok {
			out = append(out, qt)
			continue
		}
		if ix.cfg.fuzzy > 0 && lookups < maxLookups && len(qt.t) >= fuzzyMinLen {
			lookups++
			if t := ix.ti.nearest(qt.t); t != "" && !seen[t] {
				seen[t] = true
				out = append(out, qterm{t: t, w: qt.w * ix.cfg.fuzzy})
			}
		}
	}
	return out
}

// addNameCoverage adds to each candidate's score nameCoverage times the share
// of its name's terms, weighted by IDF, that the request contains. A tool's
// name is its most compact statement of what it does, so a request that
// says all of "get current time" is about get_current_time even when a
// longer description elsewhere repeats "time" more often.
func (ix *Index) addNameCoverage(q []qterm, ids []int32, sc []float64) {
	if ix.cfg.nameCoverage == 0 {
		return
	}
	inQuery := make(map[string]bool, len(q))
	for _, qt := range q {
		inQuery[qt.t] = true
	}
	for _, id := range ids {
		var num, den float64
		for _, t := range ix.tools[id].nameTerms {
			idf := ix.ti.idf(len(ix.ti.post[t]))
			den += idf
			if inQuery[t] {
				num += idf
			}
		}
		if den > 0 {
			sc[id] += ix.cfg.nameCoverage * num / den
		}
	}
}

// hierarchical opens the best domains (at least minDomains, more while they
// hold fewer than k tools) and ranks their tools by
// alpha·domain/bestDomain + (1-alpha)·tool/bestTool.
func (ix *Index) hierarchical(q []qterm, k int, s *scratch, best float64) []Hit {
	c := &ix.cfg
	s.dtouch = ix.di.score(q, &c.domain, s.dom, s.dtouch)
	bestDom := maxScore(s.dtouch, s.dom)
	if bestDom == 0 {
		return nil
	}
	doms := topK(s.dtouch, s.dom, len(s.dtouch))
	open := map[int32]bool{}
	size := 0
	for _, d := range doms {
		if len(open) >= c.minDomains && size >= k {
			break
		}
		open[d] = true
		size += ix.doms[d].ntools
	}
	var cand []int32
	for _, id := range s.touched {
		if open[ix.tools[id].dom] {
			cand = append(cand, id)
			s.tool[id] /= best
		}
	}
	ix.addNameCoverage(q, cand, s.tool)
	bestTool := maxScore(cand, s.tool)
	// Tools of an open domain that match no query term still rank by their
	// domain's share when the matching ones are too few.
	if len(cand) < k {
		for id, t := range ix.tools {
			if t != nil && open[t.dom] && s.tool[id] == 0 {
				cand = append(cand, int32(id))
				s.touched = append(s.touched, int32(id)) // so putScratch clears it
			}
		}
	}
	for _, id := range cand {
		tool := 0.0
		if bestTool > 0 {
			tool = s.tool[id] / bestTool
		}
		s.tool[id] = c.alpha*s.dom[ix.tools[id].dom]/bestDom + (1-c.alpha)*tool
	}
	return ix.hits(topK(cand, s.tool, k), s.tool)
}

// hits converts ids to Hits scored from sc.
func (ix *Index) hits(ids []int32, sc []float64) []Hit {
	out := make([]Hit, len(ids))
	for i, id := range ids {
		t := ix.tools[id]
		out[i] = Hit{Server: t.doc.Server, Name: t.doc.Name, Score: sc[id]}
	}
	return out
}

func maxScore(ids []int32, sc []float64) float64 {
	best := 0.0
	for _, id := range ids {
		best = max(best, sc[id])
	}
	return best
}

// topK returns the k ids with the highest scores, best first; ties go to the
// lower id (the earlier added tool) so results are deterministic. It keeps a
// k-sized heap, so it costs O(n log k) over n candidates.
func topK(ids []int32, sc []float64, k int) []int32 {
	if k <= 0 {
		return nil
	}
	better := func(a, b int32) bool {
		if sc[a] != sc[b] {
			return sc[a] > sc[b]
		}
		return a < b
	}
	// h is a min-heap (worst at h[0]) of the best k seen so far.
	h := make([]int32, 0, min(k, len(ids)))
	for _, id := range ids {
		if len(h) < k {
			h = append(h, id)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
			continue
		}
		if !better(id, h[0]) {
			continue
		}
		h[0] = id
		for i := 0; ; {
			l := 2*i + 1
			if l >= len(h) {
				break
			}
			w := l
			if r := l + 1; r < len(h) && better(h[l], h[r]) {
				w = r
			}
			if !better(h[i], h[w]) {
				break
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	return h
}
