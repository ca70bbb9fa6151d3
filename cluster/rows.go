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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/benchmarks"
)

// DefaultSpoolMax bounds the rows a replica keeps waiting for NATS (in the
// spool on disk, or about to be sent); rows past it are dropped.
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
	// SpoolMax bounds the rows waiting for NATS; rows past it are dropped,
	// and counted, until NATS takes some. 0 means DefaultSpoolMax.
	SpoolMax int
	// Log receives what went wrong; nil means slog.Default().
	Log *slog.Logger
}

// Rows publishes benchmark rows to the stream RowStream, each exactly once.
// Add hands the row to a publisher goroutine, which sends it and waits for
// JetStream's acknowledgement; while NATS is away, or a send fails, rows go
// to the spool on disk (one file each, bounded), which is sent in order, and
// emptied file by file as JetStream acknowledges, once NATS is back. A
// row's message id is its replica and request id, so a row sent twice (an
// ack lost, a restart between the send and the removal) is stored once.
// Rows is a benchmarks.Logger sink. A row handed over but neither sent nor
// spooled when the process dies is lost to the stream only: it is in the
// replica's CSV.
type Rows struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	opts    RowsOptions
	subject string
	log     *slog.Logger

	queue   chan spooledRow
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	seq     atomic.Uint64
	waiting atomic.Int64 // rows handed over and not yet stored by JetStream
	onDisk  atomic.Int64 // of which in the spool
	dropped atomic.Int64
	full    atomic.Bool

	stream  bool // the stream is known to exist (the publisher's own)
	closing sync.Once
}

// rowQueue is how many rows wait in memory for the publisher; past it, Add
// spools to disk itself.
const rowQueue = 4096

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
		queue:   make(chan spooledRow, rowQueue),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	names, err := r.pending()
	if err != nil {
		return nil, err
	}
	r.waiting.Store(int64(len(names)))
	r.onDisk.Store(int64(len(names)))
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

// Add hands the row to the publisher. It never waits on NATS: it costs a
// channel send, or a file write when the publisher is far behind.
func (r *Rows) Add(row benchmarks.Row) {
	if r.waiting.Load() >= int64(r.opts.SpoolMax) {
		r.dropped.Add(1)
		if !r.full.Swap(true) {
			r.log.Error("cluster: the row spool is full; rows are dropped until NATS takes them", "max", r.opts.SpoolMax, "dir", r.opts.SpoolDir)
		}
		return
	}
	sr := spooledRow{Replica: r.opts.Replica, ID: row.RequestID, Row: row}
	if sr.ID == "" {
		sr.ID = "seq-" + strconv.FormatUint(r.seq.Add(1), 10)
	}
	r.waiting.Add(1)
	select {
	case r.queue <- sr:
	default:
		r.spool(sr)
		r.poke()
	}
}

// spooledRow is a row as the spool and the stream hold it.
type spooledRow struct {
	Replica string         `json:"replica"`
	ID      string         `json:"id"`
	Row     benchmarks.Row `json:"row"`
}

// Spooled is how many rows wait for NATS: on disk, or about to be sent.
func (r *Rows) Spooled() int { return int(r.waiting.Load()) }

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

// spool writes a row to the spool; its name orders the spool (a time-based
// sequence, fixed-width).
func (r *Rows) spool(sr spooledRow) {
	b, err := json.Marshal(sr)
	if err != nil {
		r.waiting.Add(-1)
		r.log.Error("cluster: encode a row", "err", err)
		return
	}
	path := filepath.Join(r.opts.SpoolDir, fmt.Sprintf("%020d.json", r.seq.Add(1)))
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, b, 0o600) // a row holds a person's words
	if err == nil {
		r.onDisk.Add(1) // before the publisher can see it
		if err = os.Rename(tmp, path); err != nil {
			r.onDisk.Add(-1)
		}
	}
	if err != nil {
		r.waiting.Add(-1)
		os.Remove(tmp)
		r.log.Error("cluster: spool a row; it is in the CSV only", "err", err)
	}
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

// publish sends each row handed over, or spools it behind the rows already
// spooled; it sends the spool whenever kicked, and every second while rows
// wait there (NATS may have come back).
func (r *Rows) publish() {
	defer close(r.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			for {
				select {
				case sr := <-r.queue:
					r.take(ctx, sr)
					continue
				default:
				}
				break
			}
			r.drain(ctx)
			return
		case sr := <-r.queue:
			r.take(context.Background(), sr)
		case <-r.kick:
			r.drain(context.Background())
		case <-tick.C:
			if r.onDisk.Load() > 0 {
				r.drain(context.Background())
			}
		}
	}
}

// take sends a row and the others waiting in the queue behind it, in one
// batch of asynchronous publishes whose acknowledgements it then awaits;
// unless rows wait in the spool (they go behind them) or NATS is away. A row
// whose send fails goes to the spool.
func (r *Rows) take(ctx context.Context, first spooledRow) {
	batch := []spooledRow{first}
	for len(batch) < rowBatch {
		select {
		case sr := <-r.queue:
			batch = append(batch, sr)
			continue
		default:
		}
		break
	}
	if r.onDisk.Load() > 0 || !r.nc.IsConnected() || ctx.Err() != nil || r.ensureStream(ctx) != nil {
		for _, sr := range batch {
			r.spool(sr)
		}
		return
	}
	futures := make([]jetstream.PubAckFuture, len(batch))
	for i, sr := range batch {
		b, err := json.Marshal(sr)
		if err == nil {
			futures[i], err = r.js.PublishMsgAsync(r.msg(sr, b), jetstream.WithMsgID(sr.Replica+":"+sr.ID))
		}
		if err != nil {
			futures[i] = nil
		}
	}
	timeout := time.After(5 * time.Second)
	failed := 0
	for i, f := range futures {
		ok := false
		if f != nil {
			select {
			case <-f.Ok():
				ok = true
			case <-f.Err():
			case <-timeout:
			case <-ctx.Done():
			}
		}
		if ok {
			r.sent()
			continue
		}
		failed++
		r.spool(batch[i])
	}
	if failed > 0 {
		r.stream = false // look again: NATS may have lost it, or come back
		r.log.Warn("cluster: rows not published yet; they go to the spool", "rows", failed)
	}
}

// rowBatch bounds the rows sent before their acknowledgements are awaited.
const rowBatch = 256

func (r *Rows) sent() {
	r.waiting.Add(-1)
	if r.full.Swap(false) {
		r.log.Warn("cluster: the row spool has room again", "dropped", r.dropped.Load())
	}
}

// drain publishes the spooled rows in order, in batches of asynchronous
// publishes, removing each file once its row is acknowledged, until the
// spool is empty or a round makes no progress (NATS away, a publish
// refused); the rest waits for the next round. The spool is listed once a
// round, not once a batch: after a long outage it holds many files.
func (r *Rows) drain(ctx context.Context) {
	if !r.nc.IsConnected() || r.onDisk.Load() <= 0 || ctx.Err() != nil {
		return
	}
	names, err := r.pending()
	if err != nil {
		r.log.Error("cluster: read the row spool", "err", err)
		return
	}
	for len(names) > 0 && r.nc.IsConnected() && ctx.Err() == nil {
		if err := r.ensureStream(ctx); err != nil {
			return
		}
		batch := names[:min(len(names), rowBatch)]
		names = names[len(batch):]
		if !r.sendBatch(ctx, batch) {
			return
		}
	}
}

// sendBatch publishes one batch of spooled rows and clears those the stream
// acknowledged. It reports whether every row of the batch is gone from the
// spool; if not, the caller stops and the rest waits for the next round.
func (r *Rows) sendBatch(ctx context.Context, names []string) bool {
	futures := make([]jetstream.PubAckFuture, len(names))
	for i, name := range names {
		path := filepath.Join(r.opts.SpoolDir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			// A file that cannot be read would stop the spool for good:
			// set it aside for a person to look at, and go on.
			r.log.Error("cluster: a spooled row cannot be read; set aside as .bad", "file", path, "err", err)
			r.setAside(name)
			continue
		}
		var sr spooledRow
		if err := json.Unmarshal(b, &sr); err != nil {
			r.log.Error("cluster: a spooled row is unreadable; dropped", "file", path, "err", err)
			r.clear(name)
			continue
		}
		if sr.ID == "" {
			sr.ID = "spool-" + strings.TrimSuffix(name, ".json")
		}
		if futures[i], err = r.js.PublishMsgAsync(r.msg(sr, b), jetstream.WithMsgID(sr.Replica+":"+sr.ID)); err != nil {
			futures[i] = nil
			return r.unsent()
		}
	}
	timeout := time.After(5 * time.Second)
	for i, f := range futures {
		if f == nil {
			continue // set aside or dropped
		}
		select {
		case <-f.Ok():
			if !r.clear(names[i]) {
				return false
			}
			continue
		case <-f.Err():
		case <-timeout:
		case <-ctx.Done():
		}
		// The rest stays for the next round; a row sent again is stored
		// once.
		return r.unsent()
	}
	return true
}

// unsent notes that a round stopped with rows still spooled.
func (r *Rows) unsent() bool {
	r.stream = false
	r.log.Warn("cluster: rows not published yet; they stay in the spool", "spooled", r.waiting.Load())
	return false
}

// setAside renames a spooled row that cannot be read out of the spool's
// way (it no longer ends in .json), so that it stops every round no more.
func (r *Rows) setAside(name string) {
	path := filepath.Join(r.opts.SpoolDir, name)
	if err := os.Rename(path, path+".bad"); err != nil {
		r.log.Error("cluster: set aside a spooled row", "file", path, "err", err)
		return
	}
	r.onDisk.Add(-1)
	r.sent()
}

// clear removes a sent (or unreadable) row's file from the spool, and
// reports whether it is gone.
func (r *Rows) clear(name string) bool {
	if err := os.Remove(filepath.Join(r.opts.SpoolDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Error("cluster: clear a sent row from the spool", "err", err)
		return false
	}
	r.onDisk.Add(-1)
	r.sent()
	return true
}

func (r *Rows) ensureStream(ctx context.Context) error {
	if r.stream {
		return nil
	}
	if err := EnsureRowStream(ctx, r.js); err != nil {
		return err
	}
	r.stream = true
	return nil
}

func (r *Rows) msg(sr spooledRow, b []byte) *nats.Msg {
	msg := nats.NewMsg(r.subject)
	msg.Data = b
	msg.Header.Set(replicaHeader, sr.Replica)
	return msg
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
