// Package chaos is AdaptBot's fault suite: real processes (a NATS server
// built from nats-server, three replicas and two fleet workers built from
// ./app) under a load of chats, direct runs, builds and rollbacks, while
// replicas, workers and NATS are killed, paused and cut off. After each
// fault heals it checks what users rely on: every answered request has
// exactly one row in ADAPTBOT_ROWS, nothing answered 500 or hung, every
// replica serves the same digests within 10 s, and the spools empty.
//
// Its tests build only with the chaos tag, outside `go test ./...`:
//
//	go test -tags chaos ./cluster/chaos/                  # every fault, several rounds
//	CHAOS_SHORT=1 go test -tags chaos ./cluster/chaos/    # one round of each (CI)
//	CHAOS_REPORT=chaos.json go test -tags chaos ./cluster/chaos/  # the figures, as JSON
//	CHAOS_DIR=/tmp/chaos go test -tags chaos ./cluster/chaos/     # keep every process's log
//
// docs/cluster.md holds the table of the full suite.
package chaos
