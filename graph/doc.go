// Package graph is a small orchestration engine: named nodes that transform a
// state value, joined by edges and branches, checked once by Compile and then
// run many times, concurrently, each run with fresh state, a step limit and a
// trace of the nodes it visited.
//
// It is modeled on cloudwego/eino's compose package but keeps only what
// AdaptBot needs. After a node runs, exactly one edge or one branch picks the
// next node, until the run reaches End. Loops are allowed (a repair loop sends
// the flow back to an earlier node) but every run is bounded by a step limit.
//
// A typical flow is built once, in one function, with constant node keys:
//
//	g := graph.New[*chatState]()
//	g.AddNode(nodeClassify, classify)
//	g.AddNode(nodeGeneral, general)
//	g.AddNode(nodeExecute, execute)
//	g.AddEdge(graph.Start, nodeClassify)
//	g.AddBranch(nodeClassify, route, nodeGeneral, nodeExecute)
//	g.AddEdge(nodeGeneral, graph.End)
//	g.AddEdge(nodeExecute, graph.End)
//	flow, err := g.Compile()
//
// The package knows nothing of models, tools or HTTP, and must not: it only
// moves a state value from node to node. It has no reflection, no streams and
// no parallel fan-out.
package graph
