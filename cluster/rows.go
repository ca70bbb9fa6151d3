package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
// spool on disk, or about to be sent); rows past it are refused.
const DefaultSpoolMax = 100_000

// rowDuplicates is the row stream's de-duplication window: a row published
// again within it (its ack was lost, or the replica restarted before it saw
// the ack) is stored once. A spooled row is sent again within a second of
// NATS answering, so the window bounds the outage it covers: one that
// begins between a row's send and its acknowledgement and lasts longer may
// store that row twice.
const rowDuplicates = 24 * time.Hour

// RowsOptions configures a Rows.
type RowsOptions struct {
	// Replica is this replica's id; it names the row's subject and, with
	// the request id, its message id.
	Replica string
	// SpoolDir holds the rows not yet published, one file each.
	SpoolDir string
	// SpoolMax bounds the rows waiting for NATS; rows past it are refused,
	// and counted, until NATS takes some. 0 means DefaultSpoolMax.
	SpoolMax int
	// AckWait bounds how long a row waits for JetStream's acknowledgement
	// before it goes to the spool; 0 is DefaultAckWait.
	AckWait time.Duration
	// Log receives what went wrong; nil means slog.Default().
	Log *slog.Logger
}

// Rows publishes benchmark rows to the stream RowStream, each exactly once.
// Commit returns once the row is durable: acknowledged by JetStream, or
// written and fsynced to the spool on disk (one file each, bounded), which
// is sent in order, and emptied file by file as JetStream acknowledges,
// once NATS answers again. Add hands a row over without waiting. A row's
// message id is its replica and request id, so a row sent twice (an ack
// lost, a restart between the send and the removal) is stored once. Rows is
// a benchmarks.Committer: the logger waits for it, so a request is answered
// only once its row cannot be lost to a crash of the replica.
type Rows struct {
	box     *outbox
	opts    RowsOptions
	subject string
	seq     atomic.Uint64
}

var _ benchmarks.Committer = (*Rows)(nil)

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
	r := &Rows{opts: opts, subject: RowSubjectPrefix + Token(opts.Replica)}
	r.seq.Store(uint64(time.Now().UnixNano()))
	box, err := openOutbox(nc, outboxOptions{What: "row", Dir: opts.SpoolDir, Max: opts.SpoolMax, AckWait: opts.AckWait,
		Ensure: EnsureRowStream, Address: rowAddress, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	r.box = box
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

// spooledRow is a row as the spool and the stream hold it.
type spooledRow struct {
	Replica string         `json:"replica"`
	ID      string         `json:"id"`
	Row     benchmarks.Row `json:"row"`
}

// rowAddress is a spooled row's subject and message id.
func rowAddress(body []byte) (string, string, error) {
	var sr spooledRow
	if err := json.Unmarshal(body, &sr); err != nil {
		return "", "", err
	}
	id := ""
	if sr.ID != "" {
		id = sr.Replica + ":" + sr.ID
	}
	return RowSubjectPrefix + Token(sr.Replica), id, nil
}

// letter is row as the outbox sends it.
func (r *Rows) letter(row benchmarks.Row) (*letter, error) {
	sr := spooledRow{Replica: r.opts.Replica, ID: row.RequestID, Row: row}
	if sr.ID == "" {
		sr.ID = "seq-" + strconv.FormatUint(r.seq.Add(1), 10)
	}
	b, err := json.Marshal(sr)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode a row: %w", err)
	}
	return &letter{subject: r.subject, id: sr.Replica + ":" + sr.ID, body: b}, nil
}

// Add hands the row to the publisher without waiting on NATS: it costs a
// channel send, or a file write when the publisher is far behind.
func (r *Rows) Add(row benchmarks.Row) {
	l, err := r.letter(row)
	if err != nil {
		r.opts.Log.Error(err.Error())
		return
	}
	r.box.send(l)
}

// Commit hands the row over and returns once it is durable: acknowledged by
// JetStream, or fsynced in the spool. It waits at most about the
// acknowledgement wait (RowsOptions.AckWait) and an fsync. It fails only
// when neither can take the row: the spool is full, or the disk refuses.
func (r *Rows) Commit(row benchmarks.Row) error {
	l, err := r.letter(row)
	if err != nil {
		return err
	}
	err = r.box.commit(context.Background(), l)
	if errors.Is(err, errSpoolFull) {
		return fmt.Errorf("cluster: the row spool is full (%d rows wait for NATS); the row is in this replica's CSV only", r.opts.SpoolMax)
	}
	return err
}

// Spooled is how many rows wait for NATS: on disk, or about to be sent.
func (r *Rows) Spooled() int { return int(r.box.waiting.Load()) }

// Dropped is how many rows a full spool refused.
func (r *Rows) Dropped() int { return int(r.box.dropped.Load()) }

// Close stops the publisher after one last attempt of at most a few
// seconds; what is left stays in the spool for the next run.
func (r *Rows) Close() error {
	r.box.close()
	return nil
}

// EnsureRowStream creates the row stream if it does not exist, with
// Replicas copies and the de-duplication window the spool needs. An
// existing one is left as the operator configured it, but for a window
// shorter than the spool needs, which it widens (as far as the stream's
// max_age allows): a wider window costs NATS a little memory, a narrower
// one can store a re-sent row twice.
func EnsureRowStream(ctx context.Context, js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if s, err := js.Stream(ctx, RowStream); err == nil {
		cfg := s.CachedInfo().Config
		want := rowDuplicates
		if cfg.MaxAge > 0 {
			want = min(want, cfg.MaxAge)
		}
		if cfg.Duplicates < want {
			cfg.Duplicates = want
			_, err = js.UpdateStream(ctx, cfg)
		}
		return err
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
		Replicas:    Replicas(js.Conn()),
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
