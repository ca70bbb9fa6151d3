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
//   - one benchmark history: Rows commits a replica's rows to a stream
//     before their requests are answered (acknowledged by JetStream, or
//     fsynced in a bounded spool on disk while NATS does not answer), each
//     exactly once; Follow and ReadRows read every replica's rows back.
//     Traces go through the same outbox;
//   - durability: Replicas and Durability say what AdaptBot asks of
//     JetStream and what it finds that could lose acknowledged writes.
//
// The package keeps no state of its own but the spools: NATS is the store,
// and each replica's files are its cache. It must not change what AdaptBot
// does when no NATS URL is set; the edge (app) wires it only then.
// Permissions lists what a replica and a worker may do in NATS.
// clustertest runs NATS in a test, with a proxy that cuts it off; chaos is
// the fault suite over real processes (go test -tags chaos ./cluster/chaos/).
package cluster
