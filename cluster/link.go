package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"

	"adaptbot"
	"adaptbot/benchmarks"
	"adaptbot/registry"
	"adaptbot/sandbox"
	"adaptbot/traces"
)

// Link is a replica's link to NATS (ADAPTBOT_NATS_URL): the connection, and
// once the server runs, the publisher of its benchmark rows and the mirror
// of its tools. A nil *Link is a replica on files alone; its methods allow
// that.
type Link struct {
	// URL is the servers' address with any credentials redacted; Replica
	// is this replica's name.
	URL     string
	Replica string
	// NC is the connection.
	NC       *nats.Conn
	rows     *Rows // nil until FollowRows
	stopRows func()
	traces   *Traces // nil until OpenTraces
	mirror   *Mirror // nil until openMirror
	monitor  string
	stop     context.CancelFunc
	done     chan struct{}
}

// buildLockTTL bounds how long a crashed replica's build lock holds a name.
const buildLockTTL = 10 * time.Minute

// OpenMirror makes the cluster's tool bucket the truth for reg (seeding an
// empty cluster from it) and follows the bucket from now on; it returns
// once reg serves what the cluster holds.
func (l *Link) OpenMirror(ctx context.Context, reg *registry.Registry, log *slog.Logger) error {
	if l == nil {
		return nil
	}
	m, err := OpenMirror(ctx, l.NC, reg, MirrorOptions{Replica: l.Replica, Log: log})
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
		l.checkDurability(ctx, log)
		return nil
	case <-l.done:
		return errors.New("cluster: the tool watch stopped before it caught up")
	case <-time.After(time.Minute):
		return errors.New("cluster: the tools did not arrive from the cluster within a minute")
	}
}

// RetryAfter is what a request refused for want of NATS or of a fleet
// worker tells its client to wait (Retry-After): NATS reconnects within a
// second of coming back, and a worker within a few.
const RetryAfter = 5 * time.Second

// checkDurability warns of what in NATS can lose what it acknowledged
// (Durability), once every stream and bucket exists.
func (l *Link) checkDurability(ctx context.Context, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, w := range Durability(ctx, l.NC, l.monitor) {
		log.Warn("cluster: " + w)
	}
	if l.monitor == "" {
		log.Info("cluster: NATS's fsync policy is not checked; set ADAPTBOT_NATS_MONITOR to a server's monitoring address (docs/cluster.md, Durability)")
	}
}

// ErrDown refuses a change while NATS is away: the other replicas would not
// see it.
var ErrDown = errors.New("NATS is not connected, so the other replicas would not see this change: builds, deletes and rollbacks are refused until it is back; chats go on with the tools loaded")

// Writable says whether a change may be made now: not while NATS is away
// (ErrDown).
func (l *Link) Writable() error {
	if l == nil || l.NC.IsConnected() {
		return nil
	}
	return ErrDown
}

// Lock takes the cluster-wide lock on a tool's name; a no-op on files.
func (l *Link) Lock(ctx context.Context, name string) (func(), error) {
	if l == nil || l.mirror == nil || name == "" {
		return func() {}, nil
	}
	return l.mirror.Lock(ctx, name, buildLockTTL)
}

// OpenLink connects replica to NATS as o says; nil, nil when o names no
// servers (files alone).
func OpenLink(o Options, replica string) (*Link, error) {
	if o.URL == "" {
		return nil, nil
	}
	o.Name = "adaptbot " + replica
	nc, err := Connect(o)
	if err != nil {
		return nil, err
	}
	return &Link{URL: Redact(o.URL), Replica: replica, NC: nc, monitor: o.Monitor}, nil
}

// FollowRows wires the benchmark rows for a cluster: each row this
// replica's logger writes is committed to the stream, or fsynced in the
// spool in spoolDir, before Log returns (so before the request's answer
// goes out); the returned
// aggregates are fed every replica's rows, from the stream's first, and
// kept up to date as any replica logs one. It waits (a minute at most) for
// the history to be in.
func (l *Link) FollowRows(ctx context.Context, spoolDir string, bench *benchmarks.Logger, log *slog.Logger) (*benchmarks.Store, error) {
	rows, err := OpenRows(l.NC, RowsOptions{
		Replica:  l.Replica,
		SpoolDir: spoolDir,
		Log:      log,
	})
	if err != nil {
		return nil, err
	}
	l.rows = rows
	bench.SetCommitter(rows)
	stats := benchmarks.NewStore()
	fctx, stop := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if err := Follow(fctx, l.NC, stats, ready, log); err != nil && !errors.Is(err, context.Canceled) {
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

// Stats reads every replica's rows from the stream into aggregates, for
// `adaptbot report`; the label names where they came from.
func Stats(ctx context.Context, nc *nats.Conn) (*benchmarks.Store, string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stats := benchmarks.NewStore()
	_, err := ReadRows(ctx, nc, stats.Add)
	return stats, "stream " + RowStream + " (every replica)", err
}

// ExportRows writes every replica's rows that f selects as CSV, as
// benchmarks.Export does for a file: through a temporary file in the same
// format.
func ExportRows(ctx context.Context, nc *nats.Conn, f benchmarks.Filter, w io.Writer) (int, error) {
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
	_, err = ReadRows(ctx, nc, func(r benchmarks.Row) {
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

// OpenTraces opens the cluster's trace store (OpenTraces), its records
// waiting in spoolDir while NATS is away; the link reports that spool in
// Status and closes the store with itself.
func (l *Link) OpenTraces(ctx context.Context, opts traces.Options, spoolDir string, log *slog.Logger) (*Traces, error) {
	t, err := OpenTraces(ctx, l.NC, opts, spoolDir, log)
	if err != nil {
		return nil, err
	}
	l.traces = t
	return t, nil
}

// Status is the cluster part of /healthz.
type Status = adaptbot.ClusterStatus

// Status says how the link is: nil for none.
func (l *Link) Status() *Status {
	if l == nil {
		return nil
	}
	st := &Status{URL: l.URL, Replica: l.Replica, Connected: l.NC.IsConnected()}
	if l.rows != nil {
		st.Spooled, st.Dropped = l.rows.Spooled(), l.rows.Dropped()
	}
	if l.traces != nil {
		st.SpooledTraces = l.traces.Spooled()
	}
	return st
}

// Close stops publishing (what is left stays in the spool) and disconnects.
func (l *Link) Close() {
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
	if l.traces != nil {
		l.traces.Close()
	}
	l.NC.Close()
}

// FleetCompiler checks tools on the fleet, and lets a tool load unchecked
// when no worker is there to check it (the replica may start before its
// fleet): the tool's first call, on a worker, compiles it anyway.
type FleetCompiler struct {
	Runner sandbox.Runner
	Log    *slog.Logger
}

// Compile checks source on the fleet, or lets it through when no worker
// answers.
func (c FleetCompiler) Compile(ctx context.Context, tool string, source []byte) error {
	err := c.Runner.Compile(ctx, tool, source)
	if adaptbot.FailureOf(err) == adaptbot.FailUnavailable {
		c.Log.Warn("tool loaded without a compile check: no fleet worker answered", "tool", tool, "err", err)
		return nil
	}
	return err
}
