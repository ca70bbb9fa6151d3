package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot/benchmarks"
	"adaptbot/cluster"
	"adaptbot/registry"
	"adaptbot/sandbox"
)

// clusterLink is a replica's link to NATS (ADAPTBOT_NATS_URL): the
// connection, and once the server runs, the publisher of its benchmark rows.
// A nil *clusterLink is a replica on files alone; its methods allow that.
type clusterLink struct {
	url      string
	replica  string
	nc       *nats.Conn
	rows     *cluster.Rows // nil until followRows
	stopRows func()
	mirror   *cluster.Mirror // nil until openMirror
	stop     context.CancelFunc
	done     chan struct{}
}

// errClusterDown refuses a change while NATS is away: it could not reach
// the other replicas.
var errClusterDown = errors.New("NATS is not connected, so the other replicas would not see this change: builds, deletes and rollbacks are refused until it is back; chats go on with the tools loaded")

// buildLockTTL bounds how long a crashed replica's build lock holds a name.
const buildLockTTL = 10 * time.Minute

// openMirror makes the cluster's tool bucket the truth for reg (seeding an
// empty cluster from it) and follows the bucket from now on; it returns
// once reg serves what the cluster holds.
func (l *clusterLink) openMirror(ctx context.Context, reg *registry.Registry, log *slog.Logger) error {
	if l == nil {
		return nil
	}
	m, err := cluster.OpenMirror(ctx, l.nc, reg, cluster.MirrorOptions{Replica: l.replica, Log: log})
	if err != nil {
		return err
	}
	l.mirror = m
	ctx, l.stop = context.WithCancel(context.Background())
	l.done = make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer close(l.done)
		if err := m.Run(ctx, ready); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("cluster: the tool watch stopped", "err", err)
		}
	}()
	select {
	case <-ready:
		return nil
	case <-l.done:
		return errors.New("cluster: the tool watch stopped before it caught up")
	case <-time.After(time.Minute):
		return errors.New("cluster: the tools did not arrive from the cluster within a minute")
	}
}

// writable says whether a change may be made now: not while NATS is away.
func (l *clusterLink) writable() error {
	if l == nil || l.nc.IsConnected() {
		return nil
	}
	return errClusterDown
}

// lock takes the cluster-wide lock on a tool's name; a no-op on files.
func (l *clusterLink) lock(ctx context.Context, name string) (func(), error) {
	if l == nil || l.mirror == nil || name == "" {
		return func() {}, nil
	}
	return l.mirror.Lock(ctx, name, buildLockTTL)
}

// openCluster connects to NATS when the configuration names it; nil, nil
// when it does not.
func openCluster(cfg Config, log *slog.Logger) (*clusterLink, error) {
	if cfg.NATSURL == "" {
		return nil, nil
	}
	nc, err := cluster.Connect(cluster.Options{URL: cfg.NATSURL, Creds: cfg.NATSCreds, Name: "adaptbot " + cfg.ReplicaID, Log: log})
	if err != nil {
		return nil, err
	}
	return &clusterLink{url: cluster.Redact(cfg.NATSURL), replica: cfg.ReplicaID, nc: nc}, nil
}

// followRows wires the benchmark rows for a cluster: this replica's go from
// its logger to the stream, through the spool beside the CSV; the returned
// aggregates are fed every replica's rows, from the stream's first, and
// kept up to date as any replica logs one. It waits (a minute at most) for
// the history to be in.
func (l *clusterLink) followRows(ctx context.Context, cfg Config, bench *benchmarks.Logger, log *slog.Logger) (*benchmarks.Store, error) {
	rows, err := cluster.OpenRows(l.nc, cluster.RowsOptions{
		Replica:  l.replica,
		SpoolDir: filepath.Join(filepath.Dir(cfg.Benchmarks), "nats-spool"),
		Log:      log,
	})
	if err != nil {
		return nil, err
	}
	l.rows = rows
	bench.SetSink(rows)
	stats := benchmarks.NewStore()
	fctx, stop := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if err := cluster.Follow(fctx, l.nc, stats, ready, log); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("cluster: stopped reading the row stream", "err", err)
		}
	}()
	l.stopRows = func() { stop(); <-done }
	select {
	case <-ready:
		log.Info("cluster: benchmark aggregates built from the stream", "rows", stats.Rows())
	case <-time.After(time.Minute):
		log.Warn("cluster: the row stream's history is not all in yet; the dashboard fills as it arrives")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return stats, nil
}

// clusterStats reads every replica's rows from the stream into aggregates,
// for `adaptbot report`; the label names where they came from.
func clusterStats(ctx context.Context, nc *nats.Conn) (*benchmarks.Store, string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stats := benchmarks.NewStore()
	_, err := cluster.ReadRows(ctx, nc, stats.Add)
	return stats, "stream " + cluster.RowStream + " (every replica)", err
}

// clusterExport writes every replica's rows that f selects as CSV, as
// benchmarks.Export does for a file: through a temporary file in the same
// format.
func clusterExport(ctx context.Context, nc *nats.Conn, f benchmarks.Filter, w io.Writer) (int, error) {
	dir, err := os.MkdirTemp("", "adaptbot-report-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	tmp, err := benchmarks.Open(filepath.Join(dir, "rows.csv"))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var werr error
	_, err = cluster.ReadRows(ctx, nc, func(r benchmarks.Row) {
		if werr == nil {
			werr = tmp.Log(r)
		}
	})
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, werr
	}
	return benchmarks.Export(filepath.Join(dir, "rows.csv"), f, w)
}

// clusterStatus is the cluster part of /healthz.
type clusterStatus struct {
	URL       string `json:"url"`
	Replica   string `json:"replica"`
	Connected bool   `json:"connected"`
	Spooled   int    `json:"spooled"`
	Dropped   int    `json:"dropped,omitempty"`
}

func (l *clusterLink) status() *clusterStatus {
	if l == nil {
		return nil
	}
	st := &clusterStatus{URL: l.url, Replica: l.replica, Connected: l.nc.IsConnected()}
	if l.rows != nil {
		st.Spooled, st.Dropped = l.rows.Spooled(), l.rows.Dropped()
	}
	return st
}

// Close stops publishing (what is left stays in the spool) and disconnects.
func (l *clusterLink) Close() {
	if l == nil {
		return
	}
	if l.stop != nil {
		l.stop()
		<-l.done
	}
	if l.stopRows != nil {
		l.stopRows()
	}
	if l.rows != nil {
		l.rows.Close()
	}
	l.nc.Close()
}

// fleetCompiler checks tools on the fleet, and lets a tool load unchecked
// when no worker is there to check it (the replica may start before its
// fleet): the tool's first call, on a worker, compiles it anyway.
type fleetCompiler struct {
	runner sandbox.Runner
	log    *slog.Logger
}

func (c fleetCompiler) Compile(ctx context.Context, tool string, source []byte) error {
	err := c.runner.Compile(ctx, tool, source)
	if sandbox.KindOf(err) == sandbox.KindUnavailable {
		c.log.Warn("tool loaded without a compile check: no fleet worker answered", "tool", tool, "err", err)
		return nil
	}
	return err
}

// fleetWorkerCommand is `adaptbot worker --nats URL`: this process joins the
// worker fleet and runs the replicas' tool calls in its own sandbox pool,
// configured as a server's would be (ADAPTBOT_WORKERS, ADAPTBOT_TOOL_TIMEOUT,
// ADAPTBOT_SANDBOX_LANDLOCK, ADAPTBOT_EGRESS_ALLOW, ...). It reads no
// registry, tools or benchmarks: calls bring their source.
func fleetWorkerCommand(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("worker")
	url := fs.String("nats", cfg.NATSURL, "NATS servers to join (default ADAPTBOT_NATS_URL)")
	creds := fs.String("creds", cfg.NATSCreds, "NATS credentials file (default ADAPTBOT_NATS_CREDS)")
	id := fs.String("id", "worker-"+cfg.ReplicaID, "this worker's name in the fleet")
	if err := parseFlags(cfg, fs, args, workerUsage); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(workerUsage, "worker: unexpected arguments %q", fs.Args())
	}
	if *url == "" {
		return usageError(workerUsage, "worker: the sandbox's own worker process is started by the server, not by hand; to run tool calls for a cluster's replicas on this machine, join the worker fleet with --nats URL (or ADAPTBOT_NATS_URL)")
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
