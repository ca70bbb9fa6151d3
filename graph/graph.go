package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Start and End are the virtual entry and exit of every graph. Use them as the
// from of the entry edge and as the to of an edge or branch target that
// finishes the run. They cannot be used as node keys.
const (
	Start = "__start__"
	End   = "__end__"
)

// NodeFunc is the work done by one node: it receives the current state and
// returns the state handed to the next node. A non-nil error stops the run.
//
// If S is a pointer type, the node may modify the state in place and return
// the same pointer; the caller of Run owns that value and must supply a fresh
// one for every run.
type NodeFunc[S any] func(ctx context.Context, s S) (S, error)

// BranchFunc chooses the key of the node that runs next, given the state
// returned by the node the branch leaves. It must return one of the targets
// declared in AddBranch (End included, if declared).
type BranchFunc[S any] func(ctx context.Context, s S) (string, error)

// Graph is a builder for a flow over a state of type S. Add nodes, edges and
// branches in any order, then call Compile. The builder records wiring
// mistakes instead of returning them from every call; Compile reports them all
// together, so a mis-wired graph never reaches Run.
//
// A Graph is not safe for concurrent use; the Compiled graph it produces is.
type Graph[S any] struct {
	nodes map[string]NodeFunc[S]
	order []string            // node keys in the order they were added
	outs  map[string][]out[S] // outgoing edges and branches by source key
	froms []string            // source keys in the order first seen, for stable errors
	errs  []error
}

// out is one outgoing edge (to is set) or branch (choose is set) of a node.
type out[S any] struct {
	to      string
	choose  BranchFunc[S]
	targets []string
}

func (o out[S]) describe(from string) string {
	if o.choose == nil {
		return fmt.Sprintf("edge %q -> %q", from, o.to)
	}
	return fmt.Sprintf("branch from %q", from)
}

// New returns an empty graph over states of type S.
func New[S any]() *Graph[S] {
	return &Graph[S]{
		nodes: make(map[string]NodeFunc[S]),
		outs:  make(map[string][]out[S]),
	}
}

// AddNode adds a node under key. Keys must be unique, non-empty, and not Start
// or End; fn must not be nil. Mistakes are reported by Compile.
func (g *Graph[S]) AddNode(key string, fn NodeFunc[S]) {
	switch {
	case key == "":
		g.errs = append(g.errs, errors.New("graph: node with empty key"))
		return
	case key == Start || key == End:
		g.errs = append(g.errs, fmt.Errorf("graph: node key %q is reserved", key))
		return
	case fn == nil:
		g.errs = append(g.errs, fmt.Errorf("graph: node %q: nil function", key))
		return
	}
	if _, dup := g.nodes[key]; dup {
		g.errs = append(g.errs, fmt.Errorf("graph: duplicate node %q", key))
		return
	}
	g.nodes[key] = fn
	g.order = append(g.order, key)
}

// AddEdge makes to run after from. from may be Start and to may be End. A node
// has exactly one outgoing edge or one branch; Compile reports any other case.
func (g *Graph[S]) AddEdge(from, to string) {
	switch {
	case from == End:
		g.errs = append(g.errs, fmt.Errorf("graph: edge %q -> %q: End cannot have outgoing edges", from, to))
		return
	case to == Start:
		g.errs = append(g.errs, fmt.Errorf("graph: edge %q -> %q: Start cannot be a target", from, to))
		return
	}
	g.addOut(from, out[S]{to: to})
}

// AddBranch lets choose pick the node that runs after from, among targets.
// The targets are declared up front so Compile can check them; at run time a
// choice outside them fails the run with an error naming from. from may be
// Start; targets may include End.
func (g *Graph[S]) AddBranch(from string, choose BranchFunc[S], targets ...string) {
	switch {
	case from == End:
		g.errs = append(g.errs, fmt.Errorf("graph: branch from %q: End cannot have outgoing edges", from))
		return
	case choose == nil:
		g.errs = append(g.errs, fmt.Errorf("graph: branch from %q: nil choose function", from))
		return
	case len(targets) == 0:
		g.errs = append(g.errs, fmt.Errorf("graph: branch from %q: no targets", from))
		return
	case slices.Contains(targets, Start):
		g.errs = append(g.errs, fmt.Errorf("graph: branch from %q: Start cannot be a target", from))
		return
	}
	// A target listed twice is harmless; keep each once.
	var uniq []string
	for _, t := range targets {
		if !slices.Contains(uniq, t) {
			uniq = append(uniq, t)
		}
	}
	g.addOut(from, out[S]{choose: choose, targets: uniq})
}

func (g *Graph[S]) addOut(from string, o out[S]) {
	if _, seen := g.outs[from]; !seen {
		g.froms = append(g.froms, from)
	}
	g.outs[from] = append(g.outs[from], o)
}

// Compile checks the wiring and returns a frozen, runnable copy of the graph.
// It reports every problem it finds, joined with errors.Join: no nodes, no or
// several entries from Start, unknown endpoints, nodes with no way out or with
// more than one, nodes unreachable from Start, End unreachable, and nodes from
// which End cannot be reached. Later changes to g do not affect the result.
func (g *Graph[S]) Compile() (*Compiled[S], error) {
	errs := slices.Clone(g.errs)
	if len(g.nodes) == 0 {
		errs = append(errs, errors.New("graph: no nodes"))
	}
	known := func(key string) bool { _, ok := g.nodes[key]; return ok }

	// Endpoints.
	for _, from := range g.froms {
		for _, o := range g.outs[from] {
			if from != Start && !known(from) {
				errs = append(errs, fmt.Errorf("graph: %s: unknown node %q", o.describe(from), from))
			}
			if o.choose == nil {
				if o.to != End && !known(o.to) {
					errs = append(errs, fmt.Errorf("graph: %s: unknown node %q", o.describe(from), o.to))
				}
				continue
			}
			for _, t := range o.targets {
				if t != End && !known(t) {
					errs = append(errs, fmt.Errorf("graph: %s: unknown target %q", o.describe(from), t))
				}
			}
		}
	}

	// Exactly one way out of Start and of every node.
	for _, from := range append([]string{Start}, g.order...) {
		if err := checkOuts(from, g.outs[from]); err != nil {
			errs = append(errs, err)
		}
	}

	// Reachability, over known endpoints only (unknown ones are reported above).
	succ := func(key string) []string {
		var next []string
		for _, o := range g.outs[key] {
			for _, t := range append([]string{o.to}, o.targets...) {
				if t == End || known(t) {
					next = append(next, t)
				}
			}
		}
		return next
	}
	reach := walk(Start, succ)
	for _, key := range g.order {
		if !reach[key] {
			errs = append(errs, fmt.Errorf("graph: node %q is unreachable from Start", key))
		}
	}
	if len(g.nodes) > 0 && !reach[End] {
		errs = append(errs, errors.New("graph: End is unreachable from Start"))
	} else if reach[End] {
		// A reachable node that cannot reach End would loop until the step
		// limit on every run that enters it.
		pred := make(map[string][]string)
		for _, key := range append([]string{Start}, g.order...) {
			for _, t := range succ(key) {
				pred[t] = append(pred[t], key)
			}
		}
		back := walk(End, func(key string) []string { return pred[key] })
		for _, key := range g.order {
			if reach[key] && !back[key] {
				errs = append(errs, fmt.Errorf("graph: node %q cannot reach End", key))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	c := &Compiled[S]{
		nodes:  make(map[string]NodeFunc[S], len(g.nodes)),
		routes: make(map[string]route[S], len(g.outs)),
		order:  slices.Clone(g.order),
	}
	for key, fn := range g.nodes {
		c.nodes[key] = fn
	}
	for from, outs := range g.outs {
		o := outs[0]
		c.routes[from] = route[S]{to: o.to, choose: o.choose, targets: slices.Clone(o.targets)}
	}
	return c, nil
}

// checkOuts reports a source that does not have exactly one edge or branch.
func checkOuts[S any](from string, outs []out[S]) error {
	var edges, branches []out[S]
	for _, o := range outs {
		if o.choose == nil {
			edges = append(edges, o)
		} else {
			branches = append(branches, o)
		}
	}
	name := fmt.Sprintf("node %q", from)
	if from == Start {
		name = "Start"
	}
	switch {
	case len(outs) == 0 && from == Start:
		return errors.New("graph: no edge from Start")
	case len(outs) == 0:
		return fmt.Errorf("graph: %s has no outgoing edge or branch", name)
	case len(edges) > 0 && len(branches) > 0:
		return fmt.Errorf("graph: %s has both an edge and a branch", name)
	case len(edges) > 1:
		tos := make([]string, len(edges))
		for i, e := range edges {
			tos[i] = e.to
		}
		return fmt.Errorf("graph: %s has %d outgoing edges %q; use one edge or one branch", name, len(edges), tos)
	case len(branches) > 1:
		return fmt.Errorf("graph: %s has %d branches; merge them into one", name, len(branches))
	}
	return nil
}

// walk returns every key reachable from start through next, start included.
func walk(start string, next func(string) []string) map[string]bool {
	seen := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		key := queue[0]
		queue = queue[1:]
		for _, n := range next(key) {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return seen
}
