package graph_test

import (
	"context"
	"fmt"

	"adaptbot/graph"
)

// Node keys are constants, so a misspelled route fails at Compile.
const (
	nodeCreate = "create"
	nodeCheck  = "check"
)

type build struct {
	attempts int
	ok       bool
}

// Example wires a create → check loop that repairs until the check passes.
func Example() {
	g := graph.New[build]()
	g.AddNode(nodeCreate, func(_ context.Context, b build) (build, error) {
		b.attempts++
		return b, nil
	})
	g.AddNode(nodeCheck, func(_ context.Context, b build) (build, error) {
		b.ok = b.attempts >= 2 // the first attempt fails its check
		return b, nil
	})
	g.AddEdge(graph.Start, nodeCreate)
	g.AddEdge(nodeCreate, nodeCheck)
	g.AddBranch(nodeCheck, func(_ context.Context, b build) (string, error) {
		if b.ok {
			return graph.End, nil
		}
		return nodeCreate, nil
	}, nodeCreate, graph.End)

	flow, err := g.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	got, trace, err := flow.Run(context.Background(), build{}, graph.WithMaxSteps(10))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attempts:", got.attempts)
	for _, step := range trace {
		fmt.Println(step.Node)
	}
	// Output:
	// attempts: 2
	// create
	// check
	// create
	// check
}
