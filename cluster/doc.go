// Package cluster runs AdaptBot past one machine on NATS with JetStream:
//
//   - a worker fleet that runs tool calls for the replicas: Fleet, the
//     client side, is a sandbox.Runner that sends each call to one worker of
//     a queue group; ServeFleet, the worker side, answers with the worker's
//     own sandbox pool;
//   - one set of tools: Mirror keeps a replica's registry and the cluster's
//     one the same (entries in a KV bucket, every accepted source in an
//     object store, the bucket's watch bringing other replicas' changes),
//     and Lock takes a tool's name cluster-wide by compare-and-set;
//   - one set of users: UserBackend keeps the users and the server secret
//     in a KV bucket, and brings each replica the others' changes;
//   - one set of failure cases: Failures keeps them in a KV bucket, one key
//     per tool written by compare-and-set, as the backend of each replica's
//     failures.Store, and follows the other replicas' writes;
//   - one benchmark history: Rows publishes a replica's rows to a stream,
//     through a bounded spool on disk while NATS is away, each exactly once;
//     Follow and ReadRows read every replica's rows back.
//
// The package keeps no state of its own but the spool: NATS is the store,
// and each replica's files are its cache. It must not change what AdaptBot
// does when no NATS URL is set; the edge (app) wires it only then.
// Permissions lists what a replica and a worker may do in NATS.
package cluster
