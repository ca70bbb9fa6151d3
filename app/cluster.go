package main

import (
	"context"
	"fmt"
	"log/slog"

	"adaptbot/cli"
	"adaptbot/cluster"
	"adaptbot/redact"
)

// fleetWorkerCommand is `adaptbot worker --nats URL`: this process joins the
// worker fleet and runs the replicas' tool calls in its own sandbox pool,
// configured as a server's would be (ADAPTBOT_WORKERS, ADAPTBOT_TOOL_TIMEOUT,
// ADAPTBOT_SANDBOX_LANDLOCK, ADAPTBOT_EGRESS_ALLOW, ...). It reads no
// registry, tools or benchmarks: calls bring their source.
func fleetWorkerCommand(ctx context.Context, e cli.Env, h hooks, args []string) error {
	cfg := e.Config
	fs := cli.NewFlags("worker")
	url := fs.String("nats", cfg.NATSURL, "NATS servers to join (default ADAPTBOT_NATS_URL)")
	creds := fs.String("creds", cfg.NATSCreds, "NATS credentials file (default ADAPTBOT_NATS_CREDS)")
	id := fs.String("id", "worker-"+cfg.ReplicaID, "this worker's name in the fleet")
	if err := e.Parse(fs, args, workerUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.UsageError(workerUsage, "worker: unexpected arguments %q", fs.Args())
	}
	if *url == "" {
		return cli.UsageError(workerUsage, "worker: the sandbox's own worker process is started by the server, not by hand; to run tool calls for a cluster's replicas on this machine, join the worker fleet with --nats URL (or ADAPTBOT_NATS_URL)")
	}
	log := slog.New(redact.Handler(slog.NewTextHandler(e.Stderr, nil)))
	cfg.Fleet = false // this process is the fleet: its calls run here
	runner, err := newRunner(cfg, h, log)
	if err != nil {
		return err
	}
	defer runner.Close()
	nc, err := cluster.Connect(cluster.Options{URL: *url, Creds: *creds, Name: "adaptbot " + *id, Log: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	st := runner.Stats()
	fmt.Fprintf(e.Stdout, "fleet worker %s: %d sandbox workers (%s), serving %s on %s\n", *id, st.Size, st.Confinement, cluster.FleetRun, cluster.Redact(*url))
	return cluster.ServeFleet(ctx, nc, runner, *id, log)
}
