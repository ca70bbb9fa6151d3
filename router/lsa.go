package router

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
)

// Latent semantic analysis (Deerwester et al. 1990) learned from the catalog
// itself: a truncated SVD of the term-by-tool TF-IDF matrix gives each term a
// vector in a space of a hundred or so dimensions where terms that occur in the
// same tools lie close, so a request can match a tool that shares none of its
// words but shares their company. Tools and requests are folded in as the
// IDF-weighted sum of their terms' vectors; a tool added or changed after the
// basis was computed is folded into the existing space (standard LSI
// folding-in), and the basis is recomputed in the background once the
// changes since the last one reach the number of tools it was computed from,
// or at once by RefreshSemantic.

// lsaBasis is a computed latent space. It is never modified once published.
type lsaBasis struct {
	dims int
	// rows maps a term to idf(t)·U[t,:], so that a text's vector is the sum
	// over its terms of weight·row, with IDF frozen when the basis was made.
	rows map[string][]float32
	// idf is each term's IDF when the basis was made.
	idf map[string]float64
	// tools is how many tools the basis was computed from.
	tools int
}

// lsaState is an Index's latent semantic signal.
type lsaState struct {
	dims int
	// basis and vecs are read under Index.mu; they change only while the
	// changer holds both Index.wmu and Index.mu.
	basis *lsaBasis
	vecs  []float32 // by tool id, dims each, scaled as storeScaled says (zero for no known term)
	// changes counts Upserts and Removes since the basis; guarded by wmu.
	changes int
	// rebuildMu lets one basis computation run at a time; pending is set
	// while a background one is scheduled or running.
	rebuildMu sync.Mutex
	pending   atomic.Bool
}

// lsaMinTools is the fewest tools worth computing a basis from.
const lsaMinTools = 8

// lsaTermWeight is the weight of a term with field frequencies tf in a tool's
// latent vector: the log of its field-weighted frequency, with the BM25F
// field weights.
func (c *config) lsaTermWeight(tf fieldVec) float64 {
	var w float64
	for f, n := range tf {
		w += c.tool.w[f] * float64(n)
	}
	if w <= 0 {
		return 0
	}
	return math.Log1p(w)
}

// foldTool computes a tool's vector in basis b from its term frequencies,
// summing over terms in sorted order so that equal tools get bit-equal
// vectors however they were added.
func (c *config) foldTool(b *lsaBasis, tf map[string]fieldVec, dst []float32) {
	terms := make([]string, 0, len(tf))
	for t := range tf {
		if _, ok := b.rows[t]; ok {
			terms = append(terms, t)
		}
	}
	sort.Strings(terms)
	acc := make([]float64, b.dims)
	var full float64
	for _, t := range terms {
		w := c.lsaTermWeight(tf[t])
		full += sq(w * b.idf[t])
		for j, x := range b.rows[t] {
			acc[j] += w * float64(x)
		}
	}
	storeScaled(dst, acc, full)
}

func sq(x float64) float64 { return x * x }

// storeScaled writes acc divided by the square root of full into dst. A
// tool's vector is divided by the length of its whole TF-IDF vector, not of
// its projection, so that a tool whose terms mostly fall outside the kept
// dimensions gets a short vector rather than a unit one pointing wherever
// its small remainder points; its cosine with a request is then the share
// of that request's match that the latent space can explain.
func storeScaled(dst []float32, acc []float64, full float64) {
	for j := range dst {
		if full <= 0 {
			dst[j] = 0
		} else {
			dst[j] = float32(acc[j] / math.Sqrt(full))
		}
	}
}

// slot returns tool id's vector, growing vecs as needed. The caller holds
// Index.mu for writing.
func (s *lsaState) slot(id int32) []float32 {
	need := (int(id) + 1) * s.dims
	if len(s.vecs) < need {
		s.vecs = append(s.vecs, make([]float32, need-len(s.vecs))...)
	}
	return s.vecs[int(id)*s.dims : need]
}

// lsaFold is the folded vector for an Upsert, computed under wmu before the
// write lock is taken.
func (ix *Index) lsaFold(tf map[string]fieldVec) []float32 {
	s := ix.lsa
	if s == nil || s.basis == nil {
		return nil
	}
	v := make([]float32, s.dims)
	ix.cfg.foldTool(s.basis, tf, v)
	return v
}

// lsaStore records tool id's folded vector (nil to clear it) and counts the
// change, returning whether the basis is due for recomputation. The caller
// holds wmu and Index.mu for writing.
func (ix *Index) lsaStore(id int32, v []float32) bool {
	s := ix.lsa
	if s == nil {
		return false
	}
	if s.basis != nil {
		dst := s.slot(id)
		if v == nil {
			clear(dst)
		} else {
			copy(dst, v)
		}
	}
	s.changes++
	due := 0
	if s.basis != nil {
		due = s.basis.tools
	}
	return ix.ti.n >= lsaMinTools && s.changes >= max(due, lsaMinTools)
}

// rebuildLater computes a new basis in a goroutine unless one is already
// scheduled.
func (ix *Index) rebuildLater() {
	if ix.lsa.pending.CompareAndSwap(false, true) {
		go func() {
			ix.lsa.rebuildMu.Lock()
			defer ix.lsa.rebuildMu.Unlock()
			ix.lsa.pending.Store(false)
			ix.rebuildLocked(false)
		}()
	}
}

// RefreshSemantic recomputes the latent semantic basis from the tools
// indexed now and refolds every tool into it, before returning. Upsert and
// Remove fold changed tools into the existing basis and recompute it in the
// background once the changes since the last basis reach the number of tools
// it was computed from (so it is recomputed each time the index doubles);
// call this after a bulk change to have the new basis at once. Route may run
// meanwhile. It does nothing when the signal is off (WithLSA(0)).
func (ix *Index) RefreshSemantic() {
	if ix.lsa == nil {
		return
	}
	ix.lsa.rebuildMu.Lock()
	defer ix.lsa.rebuildMu.Unlock()
	ix.rebuildLocked(true)
}

// rebuildLocked computes a basis from a snapshot of the postings, then
// refolds every tool from the postings as they are by then. The caller holds
// lsa.rebuildMu. Unless force is set it does nothing when the basis is not
// due (another rebuild got there first).
func (ix *Index) rebuildLocked(force bool) {
	s := ix.lsa
	ix.wmu.Lock()
	due := 0
	if s.basis != nil {
		due = s.basis.tools
	}
	if !force && s.changes < max(due, lsaMinTools) {
		ix.wmu.Unlock()
		return
	}
	// Only writers change the postings, and they hold wmu.
	terms, a, ntools := ix.lsaMatrix()
	// Changes made while the basis is computed count toward the next one.
	counted := s.changes
	ix.wmu.Unlock()

	var b *lsaBasis
	if ntools >= 2 && len(terms) >= 2 {
		u, _ := leftSingular(&a.sparse, s.dims)
		b = &lsaBasis{dims: s.dims, rows: make(map[string][]float32, len(terms)),
			idf: make(map[string]float64, len(terms)), tools: ntools}
		for i, t := range terms {
			// u has fewer than dims columns when the catalog is tiny.
			row := make([]float32, s.dims)
			for j, x := range u.row(i) {
				row[j] = float32(x * a.idf[i])
			}
			b.rows[t] = row
			b.idf[t] = a.idf[i]
		}
	}

	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	var vecs []float32
	if b != nil {
		vecs = ix.foldAll(b)
	}
	ix.mu.Lock()
	s.basis, s.vecs = b, vecs
	s.changes -= counted
	ix.mu.Unlock()
}

// lsaMatrix returns the sorted terms and the term-by-tool TF-IDF matrix of
// the indexed tools, with tools in (server, name) order so that the same
// tools give the same matrix whatever their ids. The caller holds wmu.
func (ix *Index) lsaMatrix() ([]string, *lsaSparse, int) {
	keys := make([]docKey, 0, len(ix.keys))
	for k := range ix.keys {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].server != keys[j].server {
			return keys[i].server < keys[j].server
		}
		return keys[i].name < keys[j].name
	})
	col := make(map[int32]int32, len(keys))
	for i, k := range keys {
		col[ix.keys[k]] = int32(i)
	}
	terms := make([]string, 0, len(ix.ti.post))
	for t := range ix.ti.post {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	a := &lsaSparse{sparse: sparse{rows: make([][]entry, len(terms)), cols: len(keys)}, idf: make([]float64, len(terms))}
	n := float64(len(keys))
	for i, t := range terms {
		pl := ix.ti.post[t]
		idf := math.Log(n / float64(len(pl)))
		a.idf[i] = idf
		row := make([]entry, 0, len(pl))
		for _, p := range pl {
			if w := ix.cfg.lsaTermWeight(p.tf) * idf; w > 0 {
				row = append(row, entry{col: col[p.id], v: w})
			}
		}
		sort.Slice(row, func(x, y int) bool { return row[x].col < row[y].col })
		a.rows[i] = row
	}
	return terms, a, len(keys)
}

// lsaSparse is the TF-IDF matrix with the IDF of each row's term.
type lsaSparse struct {
	sparse
	idf []float64
}

// foldAll computes every live tool's vector in basis b from the postings,
// adding terms in sorted order as foldTool does. The caller holds wmu.
func (ix *Index) foldAll(b *lsaBasis) []float32 {
	terms := make([]string, 0, len(b.rows))
	for t := range b.rows {
		if _, ok := ix.ti.post[t]; ok {
			terms = append(terms, t)
		}
	}
	sort.Strings(terms)
	acc := make([]float64, len(ix.tools)*b.dims)
	full := make([]float64, len(ix.tools))
	for _, t := range terms {
		row, idf := b.rows[t], b.idf[t]
		for _, p := range ix.ti.post[t] {
			w := ix.cfg.lsaTermWeight(p.tf)
			full[p.id] += sq(w * idf)
			dst := acc[int(p.id)*b.dims : (int(p.id)+1)*b.dims]
			for j, x := range row {
				dst[j] += w * float64(x)
			}
		}
	}
	vecs := make([]float32, len(acc))
	for id := range ix.tools {
		lo, hi := id*b.dims, (id+1)*b.dims
		storeScaled(vecs[lo:hi], acc[lo:hi], full[id])
	}
	return vecs
}

// lsaScores adds weight·cosine(query, tool) for every tool with a positive
// cosine to sc (the tool's length being that of its whole TF-IDF vector, see
// storeScaled), appending newly scored ids to touched. The caller holds
// Index.mu for reading.
func (ix *Index) lsaScores(q []qterm, sc []float64, touched []int32, weight float64) []int32 {
	s := ix.lsa
	if s == nil || s.basis == nil || weight == 0 {
		return touched
	}
	b := s.basis
	acc := make([]float64, b.dims)
	any := false
	for _, qt := range q {
		row, ok := b.rows[qt.t]
		if !ok {
			continue
		}
		any = true
		for j, x := range row {
			acc[j] += qt.w * float64(x)
		}
	}
	if !any {
		return touched
	}
	qv := make([]float32, b.dims)
	storeScaled(qv, acc, dot64(acc, acc)) // unit length
	n := min(len(ix.tools), len(s.vecs)/b.dims)
	for id := 0; id < n; id++ {
		if ix.tools[id] == nil {
			continue
		}
		c := dot32(qv, s.vecs[id*b.dims:(id+1)*b.dims])
		if c <= 1e-6 { // unrelated, up to rounding
			continue
		}
		if sc[id] == 0 {
			touched = append(touched, int32(id))
		}
		sc[id] += weight * float64(c)
	}
	return touched
}

// dot32 is the dot product of equal-length vectors, four lanes at a time.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
