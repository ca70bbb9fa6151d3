package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"adaptbot/cluster"
)

// fleetWorkerCommand is `adaptbot worker --nats URL`: this process joins the
// worker fleet and runs the replicas' tool calls in its own sandbox pool,
// configured as a server's would be (ADAPTBOT_WORKERS, ADAPTBOT_TOOL_TIMEOUT,
// ADAPTBOT_SANDBOX_LANDLOCK, ADAPTBOT_EGRESS_ALLOW, ...). It reads no
// registry, tools or benchmarks: calls bring their source.
func fleetWorkerCommand(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("nats", cfg.NATSURL, "NATS servers to join (default ADAPTBOT_NATS_URL)")
	creds := fs.String("creds", cfg.NATSCreds, "NATS credentials file (default ADAPTBOT_NATS_CREDS)")
	id := fs.String("id", "worker-"+cfg.ReplicaID, "this worker's name in the fleet")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || fs.NArg() > 0 {
		return fmt.Errorf("usage: adaptbot worker --nats URL [--creds FILE] [--id ID] (without arguments, `adaptbot worker` is the sandbox's own worker process)")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg.Fleet = false // this process is the fleet: its calls run here
	runner, err := newRunner(cfg, log)
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
	fmt.Fprintf(stdout, "fleet worker %s: %d sandbox workers (%s), serving %s on %s\n", *id, st.Size, st.Confinement, cluster.FleetRun, cluster.Redact(*url))
	return cluster.ServeFleet(ctx, nc, runner, *id, log)
}
