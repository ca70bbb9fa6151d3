package router

import (
	"math"
	"sort"
)

// numFields is the number of weighted fields in a document. Tools and domains
// both use four (see the field constants in index.go).
const numFields = 4

// fieldVec holds one number per field: term frequencies or lengths.
type fieldVec [numFields]float32

// posting records that document id contains a term, with its frequency per field.
type posting struct {
	id int32
	tf fieldVec
}

// bm25f holds the parameters of field-weighted BM25 (Robertson and Zaragoza,
// "The Probabilistic Relevance Framework: BM25 and Beyond", 2009): per-field
// frequencies are length-normalized with their own b, weighted, summed, and
// only then saturated with k1, so a term repeated across fields is not
// counted as several independent matches.
type bm25f struct {
	k1 float64
	w  [numFields]float64
	b  [numFields]float64
}

// invIndex is an inverted index that updates in place. It keeps, per term, a
// posting list sorted by document id, and the totals BM25 needs (live
// document count, summed field lengths, each document's field lengths).
// Document frequency is the length of a posting list and IDF is computed
// when a query runs, so a change to one document touches only its own terms:
// a binary search and a short copy per changed term.
type invIndex struct {
	post   map[string][]posting
	dels   map[string][]string // one-letter deletions of each term → terms; nil when fuzzy lookup is off
	lens   []fieldVec          // by id
	live   []bool              // by id
	sumLen [numFields]float64
	n      int
	free   []int32
}

// newInvIndex returns an empty index; fuzzy makes it keep the deletion table
// that nearest needs.
func newInvIndex(fuzzy bool) *invIndex {
	x := &invIndex{post: map[string][]posting{}}
	if fuzzy {
		x.dels = map[string][]string{}
	}
	return x
}

// alloc returns an unused document id, now live and empty.
func (x *invIndex) alloc() int32 {
	var id int32
	if k := len(x.free); k > 0 {
		id = x.free[k-1]
		x.free = x.free[:k-1]
	} else {
		x.lens = append(x.lens, fieldVec{})
		x.live = append(x.live, false)
		id = int32(len(x.lens) - 1)
	}
	x.live[id] = true
	x.n++
	return id
}

// release frees document id; its terms must already be removed.
func (x *invIndex) release(id int32) {
	x.live[id] = false
	x.n--
	x.free = append(x.free, id)
}

// apply adds delta (per term, per field; negative to subtract) to document
// id's frequencies, inserting and deleting postings as terms appear and
// disappear.
func (x *invIndex) apply(id int32, delta map[string]fieldVec) {
	for t, d := range delta {
		if d == (fieldVec{}) {
			continue
		}
		var sum fieldVec
		pl := x.post[t]
		i := sort.Search(len(pl), func(i int) bool { return pl[i].id >= id })
		if i < len(pl) && pl[i].id == id {
			sum = pl[i].tf
		}
		for f := range d {
			sum[f] += d[f]
			if sum[f] < 0.5 { // counts are whole numbers; guard against drift
				sum[f] = 0
			}
			x.lens[id][f] += d[f]
			x.sumLen[f] += float64(d[f])
		}
		switch found := i < len(pl) && pl[i].id == id; {
		case sum == (fieldVec{}) && found:
			pl = append(pl[:i], pl[i+1:]...)
			if len(pl) == 0 {
				delete(x.post, t)
				x.removeDeletions(t)
			} else {
				x.post[t] = pl
			}
		case sum == (fieldVec{}):
			// A removal of a term the document does not have: nothing to do.
		case found:
			pl[i].tf = sum
		default:
			pl = append(pl, posting{})
			copy(pl[i+1:], pl[i:])
			pl[i] = posting{id: id, tf: sum}
			if len(pl) == 1 {
				x.addDeletions(t)
			}
			x.post[t] = pl
		}
	}
}

// qterm is a distinct query term with its weight.
type qterm struct {
	t string
	w float64
}

// maxQueryTokens bounds the work one request can cause. A request longer
// than this (some 500 words) is almost always a pasted document or blob;
// its opening says what is wanted.
const maxQueryTokens = 512

// queryTerms counts the distinct terms of text. Repeats raise a term's weight
// with saturation (BM25's k3 = 8), so a word said twice counts more but not double.
func queryTerms(text string) []qterm {
	toks := appendTokens(nil, text, maxQueryTokens)
	n := map[string]int{}
	var out []qterm
	for _, t := range toks {
		if n[t] == 0 {
			out = append(out, qterm{t: t})
		}
		n[t]++
	}
	const k3 = 8.0
	for i := range out {
		c := float64(n[out[i].t])
		out[i].w = (k3 + 1) * c / (k3 + c)
	}
	return out
}

// idf is the BM25 inverse document frequency; its +1 keeps it positive even
// for a term in every document.
func (x *invIndex) idf(df int) float64 {
	return math.Log(1 + (float64(x.n)-float64(df)+0.5)/(float64(df)+0.5))
}

// avgLens returns the mean length of each field.
func (x *invIndex) avgLens() (avg [numFields]float64) {
	if x.n == 0 {
		return
	}
	for f := range avg {
		avg[f] = x.sumLen[f] / float64(x.n)
	}
	return
}

// tfWeight is the length-normalized, field-weighted frequency of a term in a
// document: the quantity BM25F saturates.
func (p *bm25f) tfWeight(tf, lens fieldVec, avg *[numFields]float64) float64 {
	var w float64
	for f := range tf {
		if tf[f] == 0 || p.w[f] == 0 {
			continue
		}
		norm := 1.0
		if avg[f] > 0 {
			norm = 1 - p.b[f] + p.b[f]*float64(lens[f])/avg[f]
		}
		w += p.w[f] * float64(tf[f]) / norm
	}
	return w
}

// score adds the BM25F score of every document matching q into acc (indexed
// by id, len(acc) ≥ len(x.lens)) and appends each newly scored id to touched.
func (x *invIndex) score(q []qterm, p *bm25f, acc []float64, touched []int32) []int32 {
	avg := x.avgLens()
	for _, qt := range q {
		pl := x.post[qt.t]
		if len(pl) == 0 {
			continue
		}
		idf := x.idf(len(pl)) * qt.w
		for _, ps := range pl {
			w := p.tfWeight(ps.tf, x.lens[ps.id], &avg)
			if w == 0 {
				continue
			}
			if acc[ps.id] == 0 {
				touched = append(touched, ps.id)
			}
			acc[ps.id] += idf * w / (p.k1 + w)
		}
	}
	return touched
}

// fuzzyMinLen is the shortest term that may be matched approximately: one
// edit turns most shorter words into other words ("root" into "robot").
const fuzzyMinLen = 5

// deletions calls f with each string made by deleting one byte of t. Only
// terms of ASCII letters take part: digits make identifiers, not typos.
func deletions(t string, f func(string)) {
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return
		}
	}
	for i := 0; i < len(t); i++ {
		if i > 0 && t[i] == t[i-1] {
			continue // same result as deleting t[i-1]
		}
		f(t[:i] + t[i+1:])
	}
}

func (x *invIndex) addDeletions(t string) {
	if x.dels == nil || len(t) < fuzzyMinLen {
		return
	}
	deletions(t, func(d string) { x.dels[d] = append(x.dels[d], t) })
}

func (x *invIndex) removeDeletions(t string) {
	if x.dels == nil || len(t) < fuzzyMinLen {
		return
	}
	deletions(t, func(d string) {
		l := x.dels[d]
		for i := range l {
			if l[i] == t {
				l[i] = l[len(l)-1]
				l = l[:len(l)-1]
				break
			}
		}
		if len(l) == 0 {
			delete(x.dels, d)
		} else {
			x.dels[d] = l
		}
	})
}

// nearest returns the indexed term one edit (insertion, deletion,
// substitution or transposition of neighbours) away from q that the most
// documents contain, or "" when there is none. It catches typos ("caculate")
// and near forms ("ppt" for "pptx") using only the index's own vocabulary.
func (x *invIndex) nearest(q string) string {
	if x.dels == nil || len(q) < fuzzyMinLen {
		return ""
	}
	best, bestDF := "", 0
	consider := func(t string) {
		if t == q || t == best {
			return
		}
		if df := len(x.post[t]); df > bestDF || df == bestDF && df > 0 && t < best {
			best, bestDF = t, df
		}
	}
	// Indexed terms that are q plus one letter.
	for _, t := range x.dels[q] {
		consider(t)
	}
	deletions(q, func(d string) {
		// Indexed terms that are q minus one letter.
		if _, ok := x.post[d]; ok && len(d) >= fuzzyMinLen {
			consider(d)
		}
		// Indexed terms that share a one-letter deletion with q:
		// a substitution or a transposition away.
		for _, t := range x.dels[d] {
			if len(t) == len(q) && oneSwapOrSub(q, t) {
				consider(t)
			}
		}
	})
	return best
}

// oneSwapOrSub reports whether equal-length a and b differ by one
// substitution or one transposition of adjacent letters.
func oneSwapOrSub(a, b string) bool {
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return false
	}
	if a[i+1:] == b[i+1:] {
		return true
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
}
