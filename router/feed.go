package router

import (
	"context"
	"sync"

	"adaptbot/toolbox"
)

// Tools is what a Feed follows: the tools that serve and their changes;
// toolbox.Box is one.
type Tools interface {
	Serving() []toolbox.Tool
	OnChange(fn func(toolbox.Change))
}

// FeedOptions configures a Feed. The zero value learns nothing and
// describes no domain.
type FeedOptions struct {
	// Learn turns on learning from use (ADAPTBOT_LEARN).
	Learn bool
	// Describe returns the description of a remote tool's domain (its MCP
	// server's), or "".
	Describe func(server string) string
}

// Feed keeps an Index in step with a set of tools, one Upsert or Remove per
// change and never a rebuild, and learns from use. It finds tools by the
// names the rest of AdaptBot uses: a local tool's bare name, a remote one's
// "server/tool". A local tool is indexed under its domain (category), a
// remote one under its server. It is safe for concurrent use.
type Feed struct {
	ix   *Index
	opts FeedOptions

	mu     sync.Mutex
	domain map[string]string // local tool name → the domain it is indexed under
}

// NewFeed indexes tools' serving tools in ix and follows their changes.
func NewFeed(ix *Index, tools Tools, opts FeedOptions) *Feed {
	f := &Feed{ix: ix, opts: opts, domain: map[string]string{}}
	// Subscribe and load under the lock: a change announced meanwhile
	// waits, and is applied after the load, not before it.
	f.mu.Lock()
	defer f.mu.Unlock()
	tools.OnChange(f.Apply)
	for _, t := range tools.Serving() {
		f.upsertLocked(t.Spec())
	}
	return f
}

// Index returns the index the feed keeps.
func (f *Feed) Index() *Index { return f.ix }

// Apply brings the index in step with one change; NewFeed subscribes it.
func (f *Feed) Apply(c toolbox.Change) {
	switch c.Kind {
	case toolbox.Added, toolbox.Updated:
		f.upsert(c.Spec)
	case toolbox.Removed:
		f.remove(c.Spec)
	}
}

func (f *Feed) doc(s toolbox.Spec) Doc {
	d := Doc{Server: s.Category, Name: s.Name, Description: s.Description, Params: ParamsFromSchema(s.Parameters)}
	if server, tool, remote := toolbox.SplitName(s.Name); remote {
		d.Server, d.Name = server, tool
		if f.opts.Describe != nil {
			d.ServerDescription = f.opts.Describe(server)
		}
	}
	return d
}

func (f *Feed) upsert(s toolbox.Spec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.upsertLocked(s)
}

func (f *Feed) upsertLocked(s toolbox.Spec) {
	d := f.doc(s)
	f.ix.Upsert(d)
	if _, _, remote := toolbox.SplitName(s.Name); remote {
		return
	}
	if old, ok := f.domain[s.Name]; ok && old != d.Server {
		// A new category is a new domain, so a new key: keep what the tool
		// learned under the old one.
		f.ix.MoveLearned(old, d.Server, s.Name)
		f.ix.Remove(old, s.Name)
	}
	f.domain[s.Name] = d.Server
}

func (f *Feed) remove(s toolbox.Spec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if server, tool, remote := toolbox.SplitName(s.Name); remote {
		f.ix.Remove(server, tool)
		return
	}
	f.ix.Remove(f.domain[s.Name], s.Name)
	delete(f.domain, s.Name)
}

// Find returns the names of the best tools for query, best first: a local
// tool by its name, a remote one as "server/tool".
func (f *Feed) Find(ctx context.Context, query string, k int) []string {
	hits := f.ix.RouteContext(ctx, query, k, Fused)
	names := make([]string, 0, len(hits))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hits {
		if domain, local := f.domain[h.Name]; local && domain == h.Server {
			names = append(names, h.Name)
		} else {
			names = append(names, h.Server+"/"+h.Name)
		}
	}
	return names
}

// Learn tells the router that tool (a local name or "server/tool") served
// request well; it does nothing when learning is off or the tool is gone.
// A remote tool whose server has not listed its tools yet learns the
// request when it does.
func (f *Feed) Learn(tool, request string) {
	f.learnOne(tool, request)
}

// learnOne is Learn, reporting whether the request was taken (now, or to
// wait for its remote tool).
func (f *Feed) learnOne(tool, request string) bool {
	if !f.opts.Learn {
		return false
	}
	f.mu.Lock()
	domain, local := f.domain[tool]
	f.mu.Unlock()
	if local {
		return f.ix.Learn(domain, tool, request)
	}
	server, name, remote := toolbox.SplitName(tool)
	if remote {
		f.ix.LearnLater(server, name, request)
	}
	return remote
}

// Use is one request a tool served well, as past chats recorded it.
type Use struct {
	Tool    string // a local name or "server/tool"
	Request string
}

// LearnFrom teaches the router past uses, oldest first, and returns how
// many it took. A local tool that is gone learns nothing from them. Only
// the uses the router would keep are taught (the newest LearnedPerTool per
// tool, and LearnedInAll in all), oldest first: a long-running server's
// history holds far more, and teaching each only for it to be forgotten
// took about 0.2 s of start-up at 100,000 uses.
func (f *Feed) LearnFrom(uses []Use) int {
	perTool := map[string]int{}
	var keep []int
	for i := len(uses) - 1; i >= 0 && len(keep) < LearnedInAll; i-- {
		if perTool[uses[i].Tool] == LearnedPerTool {
			continue
		}
		perTool[uses[i].Tool]++
		keep = append(keep, i)
	}
	n := 0
	for j := len(keep) - 1; j >= 0; j-- {
		if u := uses[keep[j]]; f.learnOne(u.Tool, u.Request) {
			n++
		}
	}
	return n
}
