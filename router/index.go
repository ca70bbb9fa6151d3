package router

import (
	"fmt"
	"sort"
	"sync"
)

// Doc is one tool as the router sees it.
type Doc struct {
	// Server is the tool's domain key: a local tool's category (e.g.
	// "finance") or an MCP server's name; "" for a local tool without a
	// category, which is indexed as the domain "general".
	Server string
	// ServerDescription describes the domain (an MCP server's description);
	// it may be empty.
	ServerDescription string
	// Name is the tool's name, unique within its Server.
	Name string
	// Description says what the tool does.
	Description string
	// Params are the tool's parameters, from its input schema.
	Params []Param
}

// Param is one parameter of a tool: a top-level property of its input schema.
type Param struct{ Name, Description string }

// Hit is one routed tool, with the score that ranked it (comparable only
// within one result list).
type Hit struct {
	Server string  `json:"server"`
	Name   string  `json:"name"`
	Score  float64 `json:"score"`
}

// Mode selects how Route ranks tools.
type Mode int

const (
	// Fused ranks every tool by its own BM25F score plus a share of its
	// domain's score (from the domain's own name and description). It is
	// what Route uses.
	Fused Mode = iota
	// Flat ranks every tool by its own BM25F score, ignoring domains.
	Flat
	// Hierarchical picks the best domains first (by their own text and
	// their tools' text), then ranks only their tools, by
	// 0.3·domain + 0.7·tool (each scaled to its best score).
	Hierarchical
)

// String returns the mode's name as used on the command line and in tables.
func (m Mode) String() string {
	switch m {
	case Fused:
		return "fused"
	case Flat:
		return "flat"
	case Hierarchical:
		return "hierarchical"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses a mode name as printed by Mode.String.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Fused, Flat, Hierarchical} {
		if s == m.String() {
			return m, nil
		}
	}
	return Fused, fmt.Errorf("unknown mode %q (want fused, flat or hierarchical)", s)
}

// Fields of a tool document.
const (
	fName   = iota // tool name, split into words
	fDesc          // tool description
	fParams        // parameter names and descriptions
	fDomain        // domain name and description
)

// Fields of a domain document.
const (
	dName      = iota // domain name
	dDesc             // domain description
	dToolNames        // names of all its tools
	dToolDescs        // descriptions of all its tools
)

// config holds the ranking parameters. See README.md ("Parameters") for how
// each was chosen; none is a word list and none was fitted per query.
type config struct {
	// tool scores tool documents (name, description, params, domain).
	tool bm25f
	// domain scores domain documents for Hierarchical: a domain is found by
	// its own name and description and by the text of all its tools.
	domain bm25f
	// domainOwn scores domain documents for Fused by the domain's own name
	// and description only; the tool text is already in the tool's score.
	domainOwn bm25f
	// alpha is the domain's share in Hierarchical's alpha·domain + (1-alpha)·tool.
	alpha float64
	// minDomains is how many domains Hierarchical opens at least; it opens
	// more only while they hold fewer than k tools.
	minDomains int
	// beta weighs the domain's (best-scaled) score added to a tool's
	// (best-scaled) score in Fused.
	beta float64
	// nameCoverage weighs the share of a tool's name (by IDF) that the
	// request mentions, added to its best-scaled score.
	nameCoverage float64
	// pool is how many of the best first-pass candidates get the name
	// coverage added before the final cut (at least 4k).
	pool int
	// fuzzy is the weight of a query term's nearest indexed spelling when
	// the term itself is in no tool; 0 turns fuzzy matching off.
	fuzzy float64
	// memory weighs the cosine between the request and the closest request
	// a tool served before (Learn), added to the best-scaled score: at 1, a
	// repeat of a served request counts as much as the best text match.
	memory float64
}

func defaultConfig() config {
	domainW := [numFields]float64{dName: 3, dDesc: 1, dToolNames: 1, dToolDescs: 0.5}
	domainB := [numFields]float64{dName: 0.5, dDesc: 0.75, dToolNames: 0.75, dToolDescs: 0.75}
	return config{
		tool: bm25f{
			k1: 1.2,
			w:  [numFields]float64{fName: 3, fDesc: 1, fParams: 0.3, fDomain: 0.5},
			b:  [numFields]float64{fName: 0.5, fDesc: 0.75, fParams: 0.75, fDomain: 0.75},
		},
		domain:       bm25f{k1: 1.2, w: domainW, b: domainB},
		domainOwn:    bm25f{k1: 1.2, w: [numFields]float64{dName: 3, dDesc: 1}, b: domainB},
		alpha:        0.3,
		minDomains:   3,
		beta:         0.3,
		nameCoverage: 0.3,
		pool:         100,
		fuzzy:        0.5,
		memory:       1,
	}
}

// Option configures an Index.
type Option func(*Index)

// WithEmbedder makes Route add dense cosine similarity from e to the
// lexical ranking, at a share of 0.3 (denseWeight). Embedding failures fall
// back to the lexical ranking alone.
func WithEmbedder(e Embedder) Option {
	return func(ix *Index) { ix.dense = newDenseState(e) }
}

type docKey struct{ server, name string }

// tool is an indexed Doc.
type tool struct {
	doc Doc
	dom int32 // id in Index.di
	// nameTerms are the distinct terms of the name, sorted so that sums
	// over them round the same way every time.
	nameTerms []string
}

// domain is one server or category. Its term counts live only in the domain
// index's postings, kept current by deltas as its tools change.
type domain struct {
	key    string
	desc   string
	ntools int
}

// Index routes requests to tools. It is safe for concurrent use: Route runs
// under a read lock; Upsert and Remove tokenize and compute their changes
// outside it (writers take turns on their own mutex) and hold the write lock
// only to apply them, touching only the terms of the tool that changed.
type Index struct {
	wmu     sync.Mutex // serializes writers
	mu      sync.RWMutex
	cfg     config
	keys    map[docKey]int32
	tools   []*tool // by id in ti
	ti      *invIndex
	domKeys map[string]int32
	doms    []*domain // by id in di
	di      *invIndex
	scratch sync.Pool // *scratch
	dense   *denseState
	// descTokens caches the terms of server descriptions, which every tool
	// of a server repeats; guarded by wmu.
	descTokens map[string][]string
	// mem is what Learn remembered, by tool id.
	mem memory
	// pending are LearnLater's requests for tools not indexed yet, oldest
	// first; guarded like mem.
	pending []pendingReq
}

// New returns an empty Index.
func New(opts ...Option) *Index {
	ix := &Index{
		cfg:        defaultConfig(),
		keys:       map[docKey]int32{},
		domKeys:    map[string]int32{},
		descTokens: map[string][]string{},
		mem:        newMemory(),
	}
	for _, o := range opts {
		o(ix)
	}
	ix.ti = newInvIndex(ix.cfg.fuzzy > 0)
	ix.di = newInvIndex(false)
	return ix
}

// Len returns the number of indexed tools.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.keys)
}

// Upsert adds d, or replaces the tool with the same (Server, Name).
func (ix *Index) Upsert(d Doc) {
	d.Params = append([]Param(nil), d.Params...)
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	terms := ix.toolTerms(d)
	// Only writers change the maps read here, and they hold wmu.
	k := docKey{d.Server, d.Name}
	id, exists := ix.keys[k]
	toolDelta := terms.tf
	var old *tool
	var oldTerms docTerms
	if exists {
		old = ix.tools[id]
		oldTerms = ix.toolTerms(old.doc)
		toolDelta = diff(terms.tf, oldTerms.tf)
	}
	t := &tool{doc: d, nameTerms: sortedKeys(terms.names)}

	ix.mu.Lock()
	defer ix.mu.Unlock()
	if exists {
		ix.detach(old, oldTerms)
	} else {
		id = ix.ti.alloc()
		for int(id) >= len(ix.tools) {
			ix.tools = append(ix.tools, nil)
		}
		ix.keys[k] = id
	}
	ix.ti.apply(id, toolDelta)
	t.dom = ix.attach(d, terms)
	ix.tools[id] = t
	if !exists {
		ix.learnPending(k, id)
	}
	if ix.dense != nil {
		ix.dense.invalidate(id)
	}
}

// Remove deletes the tool (server, name); it does nothing if there is none.
func (ix *Index) Remove(server, name string) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	k := docKey{server, name}
	id, ok := ix.keys[k]
	if !ok {
		return
	}
	old := ix.tools[id]
	oldTerms := ix.toolTerms(old.doc)
	neg := diff(nil, oldTerms.tf)

	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.detach(old, oldTerms)
	ix.ti.apply(id, neg)
	ix.ti.release(id)
	ix.mem.forget(id)
	delete(ix.keys, k)
	ix.tools[id] = nil
	if ix.dense != nil {
		ix.dense.invalidate(id)
	}
}

// attach adds a tool's name and description terms to its domain, creating
// the domain (or taking up a new description) as needed, and returns the
// domain's id. The caller holds both locks.
func (ix *Index) attach(d Doc, terms docTerms) int32 {
	did, ok := ix.domKeys[d.Server]
	var dm *domain
	delta := map[string]fieldVec{}
	if ok {
		dm = ix.doms[did]
	} else {
		did = ix.di.alloc()
		for int(did) >= len(ix.doms) {
			ix.doms = append(ix.doms, nil)
		}
		dm = &domain{key: d.Server}
		ix.doms[did] = dm
		ix.domKeys[d.Server] = did
		addTokens(delta, dName, DomainName(d.Server), 1)
	}
	if d.ServerDescription != "" && d.ServerDescription != dm.desc {
		addTokens(delta, dDesc, dm.desc, -1)
		addTokens(delta, dDesc, d.ServerDescription, 1)
		dm.desc = d.ServerDescription
	}
	dm.ntools++
	addCounts(delta, dToolNames, terms.names, 1)
	addCounts(delta, dToolDescs, terms.descs, 1)
	ix.di.apply(did, delta)
	return did
}

// detach subtracts a tool's terms from its domain, dropping the domain when
// it has no tools left. The caller holds both locks.
func (ix *Index) detach(t *tool, terms docTerms) {
	dm := ix.doms[t.dom]
	delta := map[string]fieldVec{}
	addCounts(delta, dToolNames, terms.names, -1)
	addCounts(delta, dToolDescs, terms.descs, -1)
	dm.ntools--
	if dm.ntools == 0 {
		addTokens(delta, dName, DomainName(dm.key), -1)
		addTokens(delta, dDesc, dm.desc, -1)
	}
	ix.di.apply(t.dom, delta)
	if dm.ntools == 0 {
		ix.di.release(t.dom)
		delete(ix.domKeys, dm.key)
		ix.doms[t.dom] = nil
	}
}

// docTerms are a tool's term frequencies per field, and the counts of its
// name and description terms that its domain sums.
type docTerms struct {
	tf    map[string]fieldVec
	names map[string]float32
	descs map[string]float32
}

// toolTerms tokenizes a tool into its fields. The caller holds wmu.
func (ix *Index) toolTerms(d Doc) docTerms {
	dt := docTerms{tf: map[string]fieldVec{}, names: map[string]float32{}, descs: map[string]float32{}}
	add := func(f int, text string, into map[string]float32) {
		for _, t := range tokens(text) {
			v := dt.tf[t]
			v[f]++
			dt.tf[t] = v
			if into != nil {
				into[t]++
			}
		}
	}
	add(fName, d.Name, dt.names)
	add(fDesc, d.Description, dt.descs)
	for _, p := range d.Params {
		add(fParams, p.Name, nil)
		add(fParams, p.Description, nil)
	}
	add(fDomain, DomainName(d.Server), nil)
	desc, ok := ix.descTokens[d.ServerDescription]
	if !ok {
		if len(ix.descTokens) >= 4096 {
			clear(ix.descTokens) // a crude bound; descriptions rarely churn
		}
		desc = tokens(d.ServerDescription)
		ix.descTokens[d.ServerDescription] = desc
	}
	for _, t := range desc {
		v := dt.tf[t]
		v[fDomain]++
		dt.tf[t] = v
	}
	return dt
}

// diff returns now minus before, per term.
func diff(now, before map[string]fieldVec) map[string]fieldVec {
	out := make(map[string]fieldVec, len(now)+len(before))
	for t, v := range now {
		out[t] = v
	}
	for t, v := range before {
		d := out[t]
		for f := range v {
			d[f] -= v[f]
		}
		out[t] = d
	}
	return out
}

// addTokens adds sign times the terms of text to field f of delta.
func addTokens(delta map[string]fieldVec, f int, text string, sign float32) {
	for _, t := range tokens(text) {
		v := delta[t]
		v[f] += sign
		delta[t] = v
	}
}

// addCounts adds sign times counts to field f of delta.
func addCounts(delta map[string]fieldVec, f int, counts map[string]float32, sign float32) {
	for t, n := range counts {
		v := delta[t]
		v[f] += sign * n
		delta[t] = v
	}
}

func sortedKeys(m map[string]float32) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DomainName is the text that names a domain; local tools without a
// category share the domain "general".
func DomainName(key string) string {
	if key == "" {
		return "general"
	}
	return key
}
