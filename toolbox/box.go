package toolbox

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"adaptbot/egress"
	"adaptbot/registry"
)

// Box lists, finds and watches the tools that serve, local and remote.
// Every door (the agent, the HTTP run endpoint, the MCP server, the CLI,
// the router feed) sees tools through one. Implementations are safe for
// concurrent use and look tools up cheaply: the agent asks per message.
type Box interface {
	// Tool returns the serving tool named name: a local tool's bare name,
	// or "server/tool" for an external MCP server's.
	Tool(name string) (Tool, bool)
	// Serving returns every tool that serves, local ones first by name,
	// then external ones by server and name. The slice is the caller's.
	Serving() []Tool
	// Len returns how many tools serve, without copying them.
	Len() int
	// OnChange registers fn, called after a tool is added, updated or
	// removed, local or remote, in the order the changes happened. fn must
	// not block for long; it may call the Box.
	OnChange(fn func(Change))
}

// ChangeKind says what happened to a tool.
type ChangeKind string

// The kinds of change a Box reports.
const (
	Added   ChangeKind = "added"
	Updated ChangeKind = "updated"
	Removed ChangeKind = "removed"
)

// Change is one tool that started serving, changed, or stopped serving.
type Change struct {
	Kind ChangeKind
	// Spec is the tool as it serves now; for Removed, as it served last.
	Spec Spec
}

// Registry is where a Set finds local tools and hears of their changes;
// *registry.Registry is one.
type Registry interface {
	Serving() []registry.Tool
	Tool(name string) (registry.Tool, bool)
	OnChange(fn func(registry.Event))
}

// Hub is where a Set finds the tools of external MCP servers; the MCP
// client's hub is one.
type Hub interface {
	Caller
	// Specs returns every server's tools as last listed, each named
	// "server/tool" with its server as its Domain.
	Specs() []Spec
	// OnChange registers fn, called with a server's name and its whole
	// new list of tools each time that list changed; calls for one server
	// come in order.
	OnChange(fn func(server string, specs []Spec))
}

// Set is the Box of a registry's tools, run in the sandbox, and of the
// tools of the MCP hubs it joined. It keeps its own index, updated on each
// change the registry or a hub reports, so lookups take a read lock and a
// map access.
type Set struct {
	reg    Registry
	runner Runner

	// change serializes applying a change and telling listeners, so that
	// listeners hear changes in the order they were applied.
	change sync.Mutex

	mu      sync.RWMutex
	tools   map[string]Tool
	servers map[string][]string // external server → its tools' names
	sorted  []Tool              // Serving's order; nil when stale

	lmu       sync.RWMutex
	listeners []func(Change)

	omu       sync.RWMutex
	observers []func(context.Context, CallEvent)

	maxDepth atomic.Int64 // LimitCallDepth

	egress atomic.Pointer[egress.Host] // SendWith
}

var _ Box = (*Set)(nil)

// New returns the Set of reg's serving tools, whose calls run on runner.
// It follows reg's changes from now on.
func New(reg Registry, runner Runner) *Set {
	s := &Set{reg: reg, runner: runner, tools: map[string]Tool{}, servers: map[string][]string{}}
	s.maxDepth.Store(DefaultMaxCallDepth)
	// Subscribe and load under the change lock: a change announced
	// meanwhile waits, and is applied after the load, not before it.
	s.change.Lock()
	defer s.change.Unlock()
	reg.OnChange(func(ev registry.Event) { s.syncLocal(ev.Entry.Name) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range reg.Serving() {
		s.tools[t.Name] = s.local(t)
	}
	return s
}

// SendWith makes h send the HTTP requests of the Set's local tools (their
// secrets, declared hosts and approvals: package egress). Without it, a
// tool's requests are GET and HEAD only, sent by the runner's client.
func (s *Set) SendWith(h *egress.Host) { s.egress.Store(h) }

// Join adds the tools of hub's servers, now and as they change. Join a
// hub once.
func (s *Set) Join(hub Hub) {
	s.change.Lock()
	defer s.change.Unlock()
	hub.OnChange(func(server string, specs []Spec) {
		s.change.Lock()
		defer s.change.Unlock()
		s.syncServer(hub, server, specs)
	})
	byServer := map[string][]Spec{}
	var order []string
	for _, sp := range hub.Specs() {
		server, _, _ := SplitName(sp.Name)
		if _, ok := byServer[server]; !ok {
			order = append(order, server)
		}
		byServer[server] = append(byServer[server], sp)
	}
	for _, server := range order {
		s.syncServer(hub, server, byServer[server])
	}
}

// Tool returns the serving tool named name. A local tool is asked of the
// registry, so that a call always runs the version that serves now, even
// before the registry's announcement of it has arrived.
func (s *Set) Tool(name string) (Tool, bool) {
	s.mu.RLock()
	t, ok := s.tools[name]
	s.mu.RUnlock()
	if _, _, remote := SplitName(name); remote {
		return t, ok
	}
	now, serving := s.reg.Tool(name)
	if !serving {
		return nil, false
	}
	if l, ok := t.(*Local); ok && l.current(now) {
		return l, true
	}
	return s.local(now), true
}

// local is the Set's Local for t: its calls go through the Set.
func (s *Set) local(t registry.Tool) *Local {
	l := NewLocal(t, s.runner)
	l.set = s
	return l
}

// Len returns how many tools serve.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.tools)
}

// Serving returns every serving tool: local ones by name, then external
// ones by server and name.
func (s *Set) Serving() []Tool {
	s.mu.RLock()
	if s.sorted != nil {
		out := slices.Clone(s.sorted)
		s.mu.RUnlock()
		return out
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sorted == nil {
		s.sorted = make([]Tool, 0, len(s.tools))
		for _, t := range s.tools {
			s.sorted = append(s.sorted, t)
		}
		slices.SortFunc(s.sorted, func(a, b Tool) int { return compareNames(a.Spec().Name, b.Spec().Name) })
	}
	return slices.Clone(s.sorted)
}

// compareNames orders local tools (bare names) before external ones, and
// external ones by server, then tool.
func compareNames(a, b string) int {
	as, at, aext := SplitName(a)
	bs, bt, bext := SplitName(b)
	if aext != bext {
		if aext {
			return 1
		}
		return -1
	}
	return cmp.Or(cmp.Compare(as, bs), cmp.Compare(at, bt))
}

// OnChange registers fn for every later change.
func (s *Set) OnChange(fn func(Change)) {
	s.lmu.Lock()
	s.listeners = append(s.listeners, fn)
	s.lmu.Unlock()
}

func (s *Set) tell(changes []Change) {
	if len(changes) == 0 {
		return
	}
	s.lmu.RLock()
	ls := slices.Clone(s.listeners)
	s.lmu.RUnlock()
	for _, c := range changes {
		for _, fn := range ls {
			fn(c)
		}
	}
}

// syncLocal brings the local tool name in step with the registry, which
// announced a change to it.
func (s *Set) syncLocal(name string) {
	s.change.Lock()
	defer s.change.Unlock()
	now, serving := s.reg.Tool(name)
	s.mu.Lock()
	old, had := s.tools[name].(*Local)
	var change Change
	switch {
	case serving && !had:
		l := s.local(now)
		s.tools[name], s.sorted = l, nil
		change = Change{Kind: Added, Spec: l.spec}
	case serving && had:
		// Keep the newest entry (its status may have changed) even when
		// what clients see did not.
		l := s.local(now)
		s.tools[name], s.sorted = l, nil
		if !l.same(old) {
			change = Change{Kind: Updated, Spec: l.spec}
		}
	case !serving && had:
		delete(s.tools, name)
		s.sorted = nil
		change = Change{Kind: Removed, Spec: old.spec}
	}
	s.mu.Unlock()
	if change.Kind != "" {
		s.tell([]Change{change})
	}
}

// syncServer replaces the tools of one external server with specs, its
// whole new list. The caller holds s.change.
func (s *Set) syncServer(hub Hub, server string, specs []Spec) {
	var changes []Change
	s.mu.Lock()
	keep := make(map[string]bool, len(specs))
	names := make([]string, 0, len(specs))
	for _, sp := range specs {
		if srv, _, ok := SplitName(sp.Name); !ok || srv != server || keep[sp.Name] {
			continue
		}
		keep[sp.Name] = true
		names = append(names, sp.Name)
		e := NewExternal(sp, hub)
		e.set = s
		old, had := s.tools[sp.Name].(*External)
		switch {
		case !had:
			changes = append(changes, Change{Kind: Added, Spec: e.spec})
		case !e.same(old):
			changes = append(changes, Change{Kind: Updated, Spec: e.spec})
		default:
			continue
		}
		s.tools[sp.Name] = e
		s.sorted = nil
	}
	for _, name := range s.servers[server] {
		if !keep[name] {
			if old, ok := s.tools[name]; ok {
				changes = append(changes, Change{Kind: Removed, Spec: old.Spec()})
				delete(s.tools, name)
				s.sorted = nil
			}
		}
	}
	s.servers[server] = names
	s.mu.Unlock()
	s.tell(changes)
}
