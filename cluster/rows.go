package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/benchmarks"
)

// DefaultSpoolMax bounds the rows a replica keeps on disk while NATS is away.
const DefaultSpoolMax = 100_000

// rowDuplicates is the stream's de-duplication window: a row published
// again within it (its ack was lost, or the replica restarted before it saw
// the ack) is stored once.
const rowDuplicates = time.Hour

// Header names on a row's message.
const (
	replicaHeader = "Adaptbot-Replica"
)

// RowsOptions configures a Rows.
type RowsOptions struct {
	// Replica is this replica's id; it names the row's subject and, with
	// the request id, its message id.
	Replica string
	// SpoolDir holds the rows not yet published, one file each.
	SpoolDir string
	// SpoolMax bounds the rows in SpoolDir; rows past it are dropped, and
	// counted, until NATS is back. 0 means DefaultSpoolMax.
	SpoolMax int
	// Log receives what went wrong; nil means slog.Default().
	Log *slog.Logger
}

// Rows publishes benchmark rows to the stream RowStream, each exactly once:
// Add writes the row to the spool on disk first, and a publisher sends the
// spool in order and removes each row once JetStream has acknowledged it. A
// row's message id is its replica and request id, so a row sent twice (an
// ack lost, a restart between the send and the removal) is stored once.
// While NATS is away the spool grows, up to its bound, and drains when NATS
// returns. Rows is a benchmarks.Logger sink.
type Rows struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	opts    RowsOptions
	subject string
	log     *slog.Logger

	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	seq     atomic.Uint64
	spooled atomic.Int64
	dropped atomic.Int64

	stream  bool // the stream is known to exist (the publisher's own)
	closing sync.Once
}

// OpenRows starts publishing rows over nc. Rows left in the spool by an
// earlier run are published first.
func OpenRows(nc *nats.Conn, opts RowsOptions) (*Rows, error) {
	if opts.SpoolMax <= 0 {
		opts.SpoolMax = DefaultSpoolMax
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Replica == "" {
		opts.Replica = ReplicaID()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := os.MkdirAll(opts.SpoolDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: row spool: %w", err)
	}
	r := &Rows{
		nc: nc, js: js, opts: opts, log: opts.Log,
		subject: RowSubjectPrefix + Token(opts.Replica),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	names, err := r.pending()
	if err != nil {
		return nil, err
	}
	r.spooled.Store(int64(len(names)))
	r.seq.Store(uint64(time.Now().UnixNano()))
	go r.publish()
	r.poke()
	return r, nil
}

// Token makes s fit as one token of a NATS subject.
func Token(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '.' || c == '*' || c == '>' || c <= ' ' || c == 0x7f {
			return '_'
		}
		return c
	}, s)
}

// Add spools the row and has it published. It never blocks on NATS.
func (r *Rows) Add(row benchmarks.Row) {
	if r.spooled.Load() >= int64(r.opts.SpoolMax) {
		if r.dropped.Add(1) == 1 {
			r.log.Error("cluster: the row spool is full; rows are dropped until NATS is back", "max", r.opts.SpoolMax, "dir", r.opts.SpoolDir)
		}
		return
	}
	b, err := json.Marshal(spooledRow{Replica: r.opts.Replica, Row: row})
	if err != nil {
		r.log.Error("cluster: encode a row", "err", err)
		return
	}
	// The name orders the spool: a time-based sequence, fixed-width.
	name := fmt.Sprintf("%020d.json", r.seq.Add(1))
	path := filepath.Join(r.opts.SpoolDir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		r.log.Error("cluster: spool a row", "err", err)
		return
	}
	r.spooled.Add(1) // before the publisher can see it
	if err := os.Rename(tmp, path); err != nil {
		r.spooled.Add(-1)
		r.log.Error("cluster: spool a row", "err", err)
		os.Remove(tmp)
		return
	}
	r.poke()
}

// spooledRow is a row as the spool and the stream hold it.
type spooledRow struct {
	Replica string         `json:"replica"`
	Row     benchmarks.Row `json:"row"`
}

// Spooled is how many rows wait on disk for NATS.
func (r *Rows) Spooled() int { return int(r.spooled.Load()) }

// Dropped is how many rows were lost to a full spool.
func (r *Rows) Dropped() int { return int(r.dropped.Load()) }

func (r *Rows) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Close stops the publisher after one last attempt of at most a few
// seconds; what is left stays in the spool for the next run.
func (r *Rows) Close() error {
	r.closing.Do(func() { close(r.stop) })
	<-r.done
	return nil
}

func (r *Rows) pending() ([]string, error) {
	ents, err := os.ReadDir(r.opts.SpoolDir)
	if err != nil {
		return nil, fmt.Errorf("cluster: row spool: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".json") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// publish sends the spool whenever kicked, and every second while rows
// wait (NATS may have come back).
func (r *Rows) publish() {
	defer close(r.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			r.drain(ctx)
			cancel()
			return
		case <-r.kick:
		case <-tick.C:
			if r.spooled.Load() == 0 {
				continue
			}
		}
		r.drain(context.Background())
	}
}

// drain publishes the spooled rows in order until it is empty or a publish
// fails (NATS away); the rest waits for the next round.
func (r *Rows) drain(ctx context.Context) {
	if !r.nc.IsConnected() {
		return
	}
	names, err := r.pending()
	if err != nil {
		r.log.Error("cluster: read the row spool", "err", err)
		return
	}
	for _, name := range names {
		if err := r.send(ctx, name); err != nil {
			r.stream = false // look again: NATS may have lost it, or come back
			r.log.Warn("cluster: row not published yet; it stays in the spool", "err", err, "spooled", r.spooled.Load())
			return
		}
		r.spooled.Add(-1)
		if r.dropped.Swap(0) > 0 {
			r.log.Warn("cluster: the row spool has room again")
		}
	}
}

func (r *Rows) send(ctx context.Context, name string) error {
	path := filepath.Join(r.opts.SpoolDir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var sr spooledRow
	if err := json.Unmarshal(b, &sr); err != nil {
		r.log.Error("cluster: a spooled row is unreadable; dropped", "file", path, "err", err)
		return os.Remove(path)
	}
	if !r.stream {
		if err := EnsureRowStream(ctx, r.js); err != nil {
			return err
		}
		r.stream = true
	}
	id := sr.Row.RequestID
	if id == "" {
		id = "spool-" + strings.TrimSuffix(name, ".json")
	}
	msg := nats.NewMsg(r.subject)
	msg.Data = b
	msg.Header.Set(replicaHeader, sr.Replica)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.js.PublishMsg(pctx, msg, jetstream.WithMsgID(sr.Replica+":"+id)); err != nil {
		return err
	}
	return os.Remove(path)
}

// EnsureRowStream creates the row stream if it does not exist; an existing
// one is left as the operator configured it.
func EnsureRowStream(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := js.Stream(ctx, RowStream); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:        RowStream,
		Description: "AdaptBot benchmark rows, one message per request, from every replica",
		Subjects:    []string{RowSubjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Duplicates:  rowDuplicates,
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return nil // another replica made it first
	}
	return err
}

// Sink receives rows; *benchmarks.Store is one.
type Sink interface {
	Add(benchmarks.Row)
}

// Follow feeds sink every row of the stream, from the first, and then each
// new row as any replica publishes it, until ctx ends. It waits for NATS and
// the stream as long as it must; ready is closed once the rows stored when
// it first reached the stream have all been fed (nil is allowed).
func Follow(ctx context.Context, nc *nats.Conn, sink Sink, ready chan<- struct{}, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	var (
		cons jetstream.Consumer
		last uint64 // the stream's last sequence when first reached
	)
	for {
		var info *jetstream.StreamInfo
		var s jetstream.Stream
		if err = EnsureRowStream(ctx, js); err == nil {
			if s, err = js.Stream(ctx, RowStream); err == nil {
				if info, err = s.Info(ctx); err == nil {
					last = info.State.LastSeq
					if info.State.Msgs == 0 {
						last = 0
					}
					cons, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
				}
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("cluster: cannot read the row stream yet; trying again", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	var once sync.Once
	signal := func() {
		if ready != nil {
			once.Do(func() { close(ready) })
		}
	}
	if last == 0 {
		signal()
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var sr spooledRow
		if err := json.Unmarshal(m.Data(), &sr); err != nil {
			log.Warn("cluster: a row in the stream is unreadable; skipped", "subject", m.Subject(), "err", err)
		} else {
			sink.Add(sr.Row)
		}
		if md, err := m.Metadata(); err == nil && md.Sequence.Stream >= last {
			signal()
		}
	})
	if err != nil {
		return fmt.Errorf("cluster: follow the row stream: %w", err)
	}
	<-ctx.Done()
	cc.Stop()
	return ctx.Err()
}

// ReadRows calls fn with every row the stream holds now, in order, and
// returns; for `adaptbot report` over the whole cluster.
func ReadRows(ctx context.Context, nc *nats.Conn, fn func(benchmarks.Row)) (int, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	s, err := js.Stream(ctx, RowStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: the row stream: %w", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("cluster: the row stream: %w", err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return 0, nil
	}
	cons, err := js.OrderedConsumer(ctx, RowStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return 0, fmt.Errorf("cluster: read the row stream: %w", err)
	}
	n := 0
	for {
		// No wait: the stream holds them all already, up to last.
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			return n, fmt.Errorf("cluster: read the row stream: %w", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			var sr spooledRow
			if err := json.Unmarshal(m.Data(), &sr); err == nil {
				fn(sr.Row)
				n++
			}
			if md, err := m.Metadata(); err == nil && md.Sequence.Stream >= last {
				return n, nil
			}
		}
		if err := batch.Error(); err != nil {
			return n, fmt.Errorf("cluster: read the row stream: %w", err)
		}
		if got == 0 {
			return n, nil
		}
	}
}
