package graph_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"adaptbot/graph"
)

type state struct {
	N    int
	Path []string
}

// visit returns a node that appends key to the path.
func visit(key string) graph.NodeFunc[state] {
	return func(_ context.Context, s state) (state, error) {
		s.Path = append(s.Path, key)
		return s, nil
	}
}

func always(key string) graph.BranchFunc[state] {
	return func(context.Context, state) (string, error) { return key, nil }
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *graph.Graph[state])
		want  []string // substrings that must all appear in the error
	}{
		{
			name: "no nodes",
			build: func(g *graph.Graph[state]) {
				g.AddEdge(graph.Start, graph.End)
			},
			want: []string{"graph: no nodes"},
		},
		{
			name: "unknown node in edge",
			build: func(g *graph.Graph[state]) {
				g.AddNode("classify", visit("classify"))
				g.AddEdge(graph.Start, "classify")
				g.AddEdge("classify", "exec")
			},
			want: []string{`graph: edge "classify" -> "exec": unknown node "exec"`},
		},
		{
			name: "unknown edge source",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", graph.End)
				g.AddEdge("ghost", "a")
			},
			want: []string{`graph: edge "ghost" -> "a": unknown node "ghost"`},
		},
		{
			name: "unknown branch target",
			build: func(g *graph.Graph[state]) {
				g.AddNode("classify", visit("classify"))
				g.AddNode("general", visit("general"))
				g.AddEdge(graph.Start, "classify")
				g.AddBranch("classify", always("general"), "general", "exec")
				g.AddEdge("general", graph.End)
			},
			want: []string{`graph: branch from "classify": unknown target "exec"`},
		},
		{
			name: "no start",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddEdge("a", graph.End)
			},
			want: []string{"graph: no edge from Start", `node "a" is unreachable from Start`},
		},
		{
			name: "two entries",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("b", visit("b"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge(graph.Start, "b")
				g.AddEdge("a", graph.End)
				g.AddEdge("b", graph.End)
			},
			want: []string{`graph: Start has 2 outgoing edges ["a" "b"]`},
		},
		{
			name: "node with no outgoing",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("b", visit("b"))
				g.AddEdge(graph.Start, "a")
				g.AddBranch("a", always("b"), "b", graph.End)
			},
			want: []string{`graph: node "b" has no outgoing edge or branch`},
		},
		{
			name: "node with edge and branch",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", graph.End)
				g.AddBranch("a", always(graph.End), graph.End)
			},
			want: []string{`graph: node "a" has both an edge and a branch`},
		},
		{
			name: "node with two edges",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("b", visit("b"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", "b")
				g.AddEdge("a", graph.End)
				g.AddEdge("b", graph.End)
			},
			want: []string{`graph: node "a" has 2 outgoing edges ["b" "__end__"]`},
		},
		{
			name: "unreachable node",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("orphan", visit("orphan"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", graph.End)
				g.AddEdge("orphan", graph.End)
			},
			want: []string{`graph: node "orphan" is unreachable from Start`},
		},
		{
			name: "duplicate key",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("a", visit("a"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", graph.End)
			},
			want: []string{`graph: duplicate node "a"`},
		},
		{
			name: "End unreachable",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("b", visit("b"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", "b")
				g.AddEdge("b", "a")
			},
			want: []string{"graph: End is unreachable from Start"},
		},
		{
			name: "trap loop cannot reach End",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("b", visit("b"))
				g.AddNode("c", visit("c"))
				g.AddEdge(graph.Start, "a")
				g.AddBranch("a", always(graph.End), graph.End, "b")
				g.AddEdge("b", "c")
				g.AddEdge("c", "b")
			},
			want: []string{`node "b" cannot reach End`, `node "c" cannot reach End`},
		},
		{
			name: "branch with no targets",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddEdge(graph.Start, "a")
				g.AddBranch("a", always(graph.End))
			},
			want: []string{`graph: branch from "a": no targets`},
		},
		{
			name: "reserved and empty keys, nil functions",
			build: func(g *graph.Graph[state]) {
				g.AddNode(graph.End, visit("x"))
				g.AddNode("", visit("x"))
				g.AddNode("nil", nil)
				g.AddNode("a", visit("a"))
				g.AddEdge(graph.Start, "a")
				g.AddBranch("a", nil, graph.End)
				g.AddEdge(graph.End, "a")
				g.AddEdge("a", graph.Start)
			},
			want: []string{
				`node key "__end__" is reserved`,
				"node with empty key",
				`node "nil": nil function`,
				`branch from "a": nil choose function`,
				"End cannot have outgoing edges",
				"Start cannot be a target",
			},
		},
		{
			name: "all problems reported together",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddNode("a", visit("a"))
				g.AddNode("b", visit("b"))
				g.AddEdge(graph.Start, "a")
				g.AddEdge("a", "missing")
			},
			want: []string{
				`duplicate node "a"`,
				`edge "a" -> "missing": unknown node "missing"`,
				`node "b" has no outgoing edge or branch`,
				`node "b" is unreachable from Start`,
				"End is unreachable from Start",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graph.New[state]()
			tt.build(g)
			c, err := g.Compile()
			if err == nil {
				t.Fatalf("Compile() = %v, nil; want error", c)
			}
			if c != nil {
				t.Errorf("Compile() returned a graph along with error %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Compile() error =\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestCompileAcceptsValidShapes(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *graph.Graph[state])
	}{
		{
			name: "branch from Start straight to End",
			build: func(g *graph.Graph[state]) {
				g.AddNode("a", visit("a"))
				g.AddBranch(graph.Start, always("a"), "a", graph.End)
				g.AddEdge("a", graph.End)
			},
		},
		{
			name: "repair loop",
			build: func(g *graph.Graph[state]) {
				g.AddNode("create", visit("create"))
				g.AddNode("check", visit("check"))
				g.AddEdge(graph.Start, "create")
				g.AddEdge("create", "check")
				g.AddBranch("check", always(graph.End), "create", graph.End, graph.End)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graph.New[state]()
			tt.build(g)
			if _, err := g.Compile(); err != nil {
				t.Fatalf("Compile() error = %v; want nil", err)
			}
		})
	}
}

func TestCompileFreezes(t *testing.T) {
	g := graph.New[state]()
	g.AddNode("a", visit("a"))
	g.AddEdge(graph.Start, "a")
	g.AddEdge("a", graph.End)
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}

	// Rewire the builder: a new node, and a second (invalid) edge out of "a".
	g.AddNode("b", visit("b"))
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.End)

	if got, want := c.Nodes(), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("Nodes() = %q, want %q", got, want)
	}
	got, _, err := c.Run(t.Context(), state{})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if want := []string{"a"}; !slices.Equal(got.Path, want) {
		t.Errorf("Run() path = %q, want %q", got.Path, want)
	}
	if _, err := g.Compile(); err == nil {
		t.Errorf("second Compile() of the rewired builder succeeded; want error for two edges out of %q", "a")
	}
}

func TestNodes(t *testing.T) {
	g := graph.New[state]()
	for _, k := range []string{"c", "a", "b"} {
		g.AddNode(k, visit(k))
	}
	g.AddEdge(graph.Start, "c")
	g.AddEdge("c", "a")
	g.AddEdge("a", "b")
	g.AddEdge("b", graph.End)
	c, err := g.Compile()
	if err != nil {
		t.Fatal(err)
	}
	got := c.Nodes()
	if want := []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Nodes() = %q, want %q", got, want)
	}
	got[0] = "changed"
	if c.Nodes()[0] != "c" {
		t.Errorf("changing the slice from Nodes() changed the graph")
	}
}
