package router

import (
	"math"
	"slices"
)

// Learning from use.
//
// A catalog says what each tool does in its author's words; people ask in
// theirs ("how warm is it outside" for a weather forecast). Learn lets the
// router remember, per tool, the last few requests that it served well, and
// a request that reads like one of them finds the tool even when no word of
// it is in the tool's own text. Requests are kept apart from the tools'
// text, in a memory with its own IDF (over the remembered requests), so that
// words common in requests but rare in tool descriptions ("please", "tell",
// "know") count for little, rather than making every often-used tool match
// every polite request.

// LearnedPerTool is how many requests a tool remembers; an older one makes
// room for a newer one.
const LearnedPerTool = 20

// LearnedInAll is how many requests the memory holds in all, the oldest
// making room: it bounds what a request may have to compare itself with
// (BenchmarkRoute10kLearned), whatever the number of tools.
const LearnedInAll = 1024

const (
	maxLearned    = LearnedPerTool
	maxRemembered = LearnedInAll
)

// maxLearnedTerms bounds the terms kept of one request: its opening says
// what was wanted (a pasted document after it says nothing about the tool).
const maxLearnedTerms = 32

// memory holds the remembered requests by tool id. It is guarded like the
// postings: writers hold Index.wmu and Index.mu, readers Index.mu for reading.
type memory struct {
	byTool map[int32][]learned      // tool → its requests, oldest first
	post   map[string]map[int32]int // term → tool → how many of its requests hold the term
	df     map[string]int           // term → how many requests hold it
	n      int                      // requests held
	// order lists every request held, oldest first, by tool and seq; an
	// entry whose request is gone (dropped by its tool, or renewed) is
	// skipped when it comes up.
	order []memRef
	seq   uint64
}

// learned is one remembered request: its distinct terms, sorted, and when it
// was last learned.
type learned struct {
	terms []string
	seq   uint64
}

type memRef struct {
	id  int32
	seq uint64
}

func newMemory() memory {
	return memory{byTool: map[int32][]learned{}, post: map[string]map[int32]int{}, df: map[string]int{}}
}

// add remembers terms (distinct, sorted) for tool id: a repeat of a request
// it holds becomes its newest; beyond maxLearned for the tool, or
// maxRemembered in all, the oldest is dropped.
func (m *memory) add(id int32, terms []string) {
	m.seq++
	reqs := m.byTool[id]
	if i := slices.IndexFunc(reqs, func(r learned) bool { return slices.Equal(r.terms, terms) }); i >= 0 {
		m.byTool[id] = append(slices.Delete(reqs, i, i+1), learned{terms, m.seq})
		m.order = append(m.order, memRef{id, m.seq})
		m.compact()
		return
	}
	if len(reqs) == maxLearned {
		m.count(id, reqs[0].terms, -1)
		reqs = slices.Delete(reqs, 0, 1)
	}
	m.count(id, terms, 1)
	m.byTool[id] = append(reqs, learned{terms, m.seq})
	m.order = append(m.order, memRef{id, m.seq})
	for m.n > maxRemembered {
		m.dropOldest()
	}
	m.compact()
}

// dropOldest drops the oldest request held, of whichever tool.
func (m *memory) dropOldest() {
	for len(m.order) > 0 {
		ref := m.order[0]
		m.order = m.order[1:]
		reqs := m.byTool[ref.id]
		i := slices.IndexFunc(reqs, func(r learned) bool { return r.seq == ref.seq })
		if i < 0 {
			continue // already gone
		}
		m.count(ref.id, reqs[i].terms, -1)
		if reqs = slices.Delete(reqs, i, i+1); len(reqs) == 0 {
			delete(m.byTool, ref.id)
		} else {
			m.byTool[ref.id] = reqs
		}
		return
	}
}

// compact drops the stale entries of order once they are most of it, so
// that renewals and forgotten tools do not grow it without bound.
func (m *memory) compact() {
	if len(m.order) <= 2*max(m.n, 64) {
		return
	}
	live := map[memRef]bool{}
	for id, reqs := range m.byTool {
		for _, r := range reqs {
			live[memRef{id, r.seq}] = true
		}
	}
	m.order = slices.DeleteFunc(m.order, func(ref memRef) bool { return !live[ref] })
}

// forget drops everything tool id remembers.
func (m *memory) forget(id int32) {
	for _, r := range m.byTool[id] {
		m.count(id, r.terms, -1)
	}
	delete(m.byTool, id)
}

// count adds sign × one request's terms to the postings and frequencies.
func (m *memory) count(id int32, terms []string, sign int) {
	m.n += sign
	for _, t := range terms {
		m.df[t] += sign
		p := m.post[t]
		if p == nil {
			p = map[int32]int{}
			m.post[t] = p
		}
		p[id] += sign
		if p[id] == 0 {
			delete(p, id)
		}
		if m.df[t] == 0 {
			delete(m.df, t)
			delete(m.post, t)
		}
	}
}

// idf is the BM25 IDF of t over the remembered requests.
func (m *memory) idf(t string) float64 {
	df := float64(m.df[t])
	return math.Log(1 + (float64(m.n)-df+0.5)/(df+0.5))
}

// scores adds weight × the best cosine between q and a request each tool
// remembers (over IDF-weighted terms) to sc, appending newly scored ids to
// touched. q is the request's own terms, before resolve: words no tool's
// text holds are exactly what the memory may know. The request's length is
// taken over the words the memory knows: a word no remembered request holds
// says nothing for or against any of them, and with few requests
// remembered it would outweigh every word they share.
func (m *memory) scores(q []qterm, sc []float64, touched []int32, weight float64) []int32 {
	if m.n == 0 || weight == 0 {
		return touched
	}
	qw := make(map[string]float64, len(q))
	var qnorm float64
	for _, qt := range q {
		if m.df[qt.t] == 0 {
			continue
		}
		w := qt.w * m.idf(qt.t)
		qw[qt.t] = w
		qnorm += w * w
	}
	if qnorm == 0 {
		return touched
	}
	qnorm = math.Sqrt(qnorm)
	// Only tools holding a request that shares a term can score.
	cand := map[int32]bool{}
	for _, qt := range q {
		for id := range m.post[qt.t] {
			cand[id] = true
		}
	}
	idfs := make(map[string]float64, 64) // each term's IDF, once per request
	idf := func(t string) float64 {
		v, ok := idfs[t]
		if !ok {
			v = m.idf(t)
			idfs[t] = v
		}
		return v
	}
	for id := range cand {
		best := 0.0
		for _, r := range m.byTool[id] {
			var dot, norm float64
			for _, t := range r.terms {
				idf := idf(t)
				norm += idf * idf
				dot += qw[t] * idf
			}
			if dot > 0 {
				best = max(best, dot/(qnorm*math.Sqrt(norm)))
			}
		}
		if best == 0 {
			continue
		}
		if sc[id] == 0 {
			touched = append(touched, id)
		}
		sc[id] += weight * best
	}
	return touched
}

// learnedTerms are the distinct terms of a request as the memory keeps them,
// sorted, so that a repeated request is recognized as one.
func learnedTerms(query string) []string {
	terms := appendTokens(nil, query, maxLearnedTerms)
	slices.Sort(terms)
	return slices.Compact(terms)
}

// Learn remembers that query was served well by the tool (server, name):
// later requests that read like it rank the tool higher, up to
// memory-weight × their cosine similarity with the closest remembered
// request (see the comment at the top of memory.go). Each tool keeps its
// last 20 requests; Upsert keeps them and Remove forgets them. Learn reports
// whether the tool is indexed and the request has any terms. Only Fused and
// Flat use what is learned; Hierarchical stays the design it reproduces.
func (ix *Index) Learn(server, name, query string) bool {
	terms := learnedTerms(query)
	if len(terms) == 0 {
		return false
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	id, ok := ix.keys[docKey{server, name}]
	if !ok {
		return false
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.mem.add(id, terms)
	return true
}

// maxPending is how many requests LearnLater holds for tools not indexed
// yet, in all; the oldest make room.
const maxPending = 1024

// pendingReq is a request LearnLater holds until its tool is indexed.
type pendingReq struct {
	key   docKey
	terms []string
}

// LearnLater is Learn for a tool that may not be indexed yet, such as a tool
// of an MCP server that has not listed its tools: if the tool is indexed,
// it learns the request now; otherwise the request waits until Upsert adds
// the tool (the last 1,024 such requests wait, in all).
func (ix *Index) LearnLater(server, name, query string) {
	terms := learnedTerms(query)
	if len(terms) == 0 {
		return
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	k := docKey{server, name}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if id, ok := ix.keys[k]; ok {
		ix.mem.add(id, terms)
		return
	}
	if len(ix.pending) == maxPending {
		ix.pending = ix.pending[1:]
	}
	ix.pending = append(ix.pending, pendingReq{k, terms})
}

// learnPending learns the waiting requests of the tool k, just added as id,
// in the order they came. The caller holds both locks.
func (ix *Index) learnPending(k docKey, id int32) {
	if len(ix.pending) == 0 {
		return
	}
	ix.pending = slices.DeleteFunc(ix.pending, func(p pendingReq) bool {
		if p.key != k {
			return false
		}
		ix.mem.add(id, p.terms)
		return true
	})
}

// MoveLearned gives the tool (to, name) what (from, name) learned, and
// reports whether both are indexed: call it when a tool moves to another
// domain (a local tool's category changed) between the Upsert of its new
// key and the Remove of its old one, which forgets.
func (ix *Index) MoveLearned(from, to, name string) bool {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	src, ok1 := ix.keys[docKey{from, name}]
	dst, ok2 := ix.keys[docKey{to, name}]
	if !ok1 || !ok2 || src == dst {
		return false
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	reqs := ix.mem.byTool[src]
	ix.mem.forget(src)
	for _, r := range reqs {
		ix.mem.add(dst, r.terms)
	}
	return true
}

// Learned returns how many requests the tool (server, name) remembers.
func (ix *Index) Learned(server, name string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, ok := ix.keys[docKey{server, name}]
	if !ok {
		return 0
	}
	return len(ix.mem.byTool[id])
}
