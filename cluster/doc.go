// Package cluster runs AdaptBot past one machine on NATS with JetStream:
// a worker fleet that runs tool calls for replicas (Fleet, the client side,
// is a sandbox.Runner; ServeFleet is the worker side), and a shared log of
// benchmark rows (Rows publishes them to a stream, with a bounded spool on
// disk while NATS is away; Follow feeds every row of the stream, from every
// replica, to the aggregates).
//
// The package holds no state of its own beyond the spool: NATS is the
// store. It must not change what AdaptBot does when no NATS URL is set;
// the edge (app) wires it only then.
package cluster
