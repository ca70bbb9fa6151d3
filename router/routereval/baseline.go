package routereval

import (
	"math"
	"regexp"
	"sort"
	"strings"

	"adaptbot/router"
)

// The two baselines below are measured by the same harness as the router.
// They are deliberately plain: each reproduces a design as described, with
// one shared plain tokenizer, so the comparison shows what this package adds.

// plainRE splits text at anything that is not an ASCII letter or digit, so
// snake_case and kebab-case names fall apart into words (camelCase does not).
var plainRE = regexp.MustCompile(`[a-z0-9]+`)

// plainTokens is the baselines' tokenizer: lower-case alphanumeric runs
// without stop words or one-character tokens; no stemming, no camelCase
// splitting, no CJK handling.
func plainTokens(s string) []string {
	var out []string
	for _, w := range plainRE.FindAllString(strings.ToLower(s), -1) {
		if len(w) > 1 && !router.Stopword(w) {
			out = append(out, w)
		}
	}
	return out
}

// tfidfSpace is a TF-IDF vector space as scikit-learn's TfidfVectorizer
// builds it: raw counts, smooth idf = ln((1+n)/(1+df)) + 1, unit length.
type tfidfSpace struct {
	idf  map[string]float64
	vecs []map[string]float64
}

func newTFIDF(texts []string) *tfidfSpace {
	df := map[string]int{}
	toks := make([][]string, len(texts))
	for i, t := range texts {
		toks[i] = plainTokens(t)
		seen := map[string]bool{}
		for _, w := range toks[i] {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	sp := &tfidfSpace{idf: map[string]float64{}}
	n := float64(len(texts))
	for w, c := range df {
		sp.idf[w] = math.Log((1+n)/(1+float64(c))) + 1
	}
	for _, t := range toks {
		sp.vecs = append(sp.vecs, sp.vector(t))
	}
	return sp
}

// vector returns the unit TF-IDF vector of toks; unknown words are ignored.
func (sp *tfidfSpace) vector(toks []string) map[string]float64 {
	v := map[string]float64{}
	for _, w := range toks {
		if idf, ok := sp.idf[w]; ok {
			v[w] += idf
		}
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	for w := range v {
		v[w] /= n
	}
	return v
}

func cosine(a, b map[string]float64) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	var s float64
	for w, x := range a {
		s += x * b[w]
	}
	return s
}

// TFIDFHierarchy is the hierarchical TF-IDF router of the "active tool
// selection" design: TF-IDF cosine picks the 3 best domains (server name and
// description), then the 5 best tools (name and description) of each; a tool
// scores 0.3·domain + 0.7·tool and is kept when that reaches 0.15.
type TFIDFHierarchy struct {
	docs    []router.Doc
	servers []string
	byDom   [][]int // tool indices per domain
	dom     *tfidfSpace
	tool    *tfidfSpace
}

// NewTFIDFHierarchy indexes docs for the baseline design.
func NewTFIDFHierarchy(docs []router.Doc) *TFIDFHierarchy {
	b := &TFIDFHierarchy{docs: docs}
	idx := map[string]int{}
	var domTexts, toolTexts []string
	for i, d := range docs {
		j, ok := idx[d.Server]
		if !ok {
			j = len(b.servers)
			idx[d.Server] = j
			b.servers = append(b.servers, d.Server)
			b.byDom = append(b.byDom, nil)
			domTexts = append(domTexts, router.DomainName(d.Server)+" "+d.ServerDescription)
		}
		b.byDom[j] = append(b.byDom[j], i)
		toolTexts = append(toolTexts, d.Name+" "+d.Description)
	}
	b.dom = newTFIDF(domTexts)
	b.tool = newTFIDF(toolTexts)
	return b
}

// Route returns up to k tools (at most 15: 3 domains × 5 tools), best first.
func (b *TFIDFHierarchy) Route(query string, k int) []router.Hit {
	const (
		nDomains  = 3
		nTools    = 5
		wDomain   = 0.3
		wTool     = 0.7
		threshold = 0.15
	)
	q := plainTokens(query)
	qd, qt := b.dom.vector(q), b.tool.vector(q)
	type scored struct {
		i int
		s float64
	}
	doms := make([]scored, len(b.servers))
	for j := range b.servers {
		doms[j] = scored{j, cosine(qd, b.dom.vecs[j])}
	}
	sort.SliceStable(doms, func(x, y int) bool { return doms[x].s > doms[y].s })
	var out []router.Hit
	for _, d := range doms[:min(nDomains, len(doms))] {
		var tools []scored
		for _, i := range b.byDom[d.i] {
			tools = append(tools, scored{i, cosine(qt, b.tool.vecs[i])})
		}
		sort.SliceStable(tools, func(x, y int) bool { return tools[x].s > tools[y].s })
		for _, t := range tools[:min(nTools, len(tools))] {
			s := wDomain*d.s + wTool*t.s
			if s >= threshold {
				out = append(out, router.Hit{Server: b.docs[t.i].Server, Name: b.docs[t.i].Name, Score: s})
			}
		}
	}
	sort.SliceStable(out, func(x, y int) bool { return out[x].Score > out[y].Score })
	return trim(out, k)
}

// PlainBM25 is Okapi BM25 (k1 = 1.5, b = 0.75) over each tool's name and
// description as one text, tokenized like the TF-IDF baseline: no name
// splitting, no stemming, no fields, no domains.
type PlainBM25 struct {
	docs []router.Doc
	tf   []map[string]int
	lens []int
	df   map[string]int
	avg  float64
}

// NewPlainBM25 indexes docs for the plain BM25 baseline.
func NewPlainBM25(docs []router.Doc) *PlainBM25 {
	b := &PlainBM25{docs: docs, df: map[string]int{}}
	total := 0
	for _, d := range docs {
		toks := plainTokens(d.Name + " " + d.Description)
		tf := map[string]int{}
		for _, w := range toks {
			if tf[w] == 0 {
				b.df[w]++
			}
			tf[w]++
		}
		b.tf = append(b.tf, tf)
		b.lens = append(b.lens, len(toks))
		total += len(toks)
	}
	if len(docs) > 0 {
		b.avg = float64(total) / float64(len(docs))
	}
	return b
}

// Route returns the k best tools, best first.
func (b *PlainBM25) Route(query string, k int) []router.Hit {
	const k1, bb = 1.5, 0.75
	seen := map[string]bool{}
	sc := make([]float64, len(b.docs))
	n := float64(len(b.docs))
	for _, w := range plainTokens(query) {
		if seen[w] || b.df[w] == 0 {
			continue
		}
		seen[w] = true
		df := float64(b.df[w])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for i, tf := range b.tf {
			if c := float64(tf[w]); c > 0 {
				sc[i] += idf * c * (k1 + 1) / (c + k1*(1-bb+bb*float64(b.lens[i])/b.avg))
			}
		}
	}
	var out []router.Hit
	for i, s := range sc {
		if s > 0 {
			out = append(out, router.Hit{Server: b.docs[i].Server, Name: b.docs[i].Name, Score: s})
		}
	}
	sortHits(out)
	return trim(out, k)
}
