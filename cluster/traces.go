package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/traces"
)

// TraceStream is the JetStream stream of request records (a request's
// trace, then its rating): one subject per request ID, keeping the newest
// message of each, so that a rating given through any replica replaces
// the record every replica reads.
const TraceStream = "adaptbot_traces"

// traceSubjects is the stream's subjects; a record's is traceSubject(id).
const traceSubjects = "adaptbot.traces.>"

func traceSubject(id string) string { return "adaptbot.traces." + id }

// recentScan bounds how many messages Recent reads past the n it returns,
// when older messages were replaced by their ratings.
const recentScan = 4

// traceSpoolMax bounds the records a replica keeps waiting for NATS.
const traceSpoolMax = 10_000

// Traces keeps the records of recent requests in TraceStream, with the
// bounds of a trace file (traces.Options): a record written through one
// replica is read through any other, so a rating needs no sticky session.
// While NATS is away, records wait in a spool on disk, as rows do, and
// reach the stream once it answers. It implements what the service needs
// of a trace store.
type Traces struct {
	stream jetstream.Stream
	js     jetstream.JetStream
	nc     *nats.Conn
	keep   int
	log    *slog.Logger
	box    *outbox
}

// OpenTraces creates the stream if need be, bounded as opts bounds a trace
// file: about twice MaxBytes in all, the oldest going first. Records wait
// in spoolDir while NATS is away; those an earlier run left there are sent
// first.
func OpenTraces(ctx context.Context, nc *nats.Conn, opts traces.Options, spoolDir string, log *slog.Logger) (*Traces, error) {
	if log == nil {
		log = slog.Default()
	}
	opts = opts.WithDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	cfg := jetstream.StreamConfig{
		Name:              TraceStream,
		Description:       "AdaptBot request records: traces and ratings, the newest per request",
		Subjects:          []string{traceSubjects},
		MaxMsgsPerSubject: 1,
		MaxBytes:          2 * opts.MaxBytes,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Duplicates:        rowDuplicates,
		Replicas:          replicasFor(ctx, js, TraceStream),
	}
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: the trace stream: %w", err)
	}
	ensure := func(ctx context.Context, js jetstream.JetStream) error {
		_, err := js.CreateOrUpdateStream(ctx, cfg) // NATS may have come back without it
		return err
	}
	box, err := openOutbox(nc, outboxOptions{What: "trace", Dir: spoolDir, Max: traceSpoolMax, Ensure: ensure, Address: traceAddress, Log: log})
	if err != nil {
		return nil, err
	}
	return &Traces{stream: s, js: js, nc: nc, keep: opts.Keep, log: log, box: box}, nil
}

// traceAddress is a record's subject and message id: the id names its
// request and its bytes, so a record sent again is stored once and a
// rating, which changes them, is a new message.
func traceAddress(body []byte) (string, string, error) {
	var r struct {
		ID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return "", "", err
	}
	if !validID(r.ID) {
		return "", "", fmt.Errorf("traces: %q is not a request ID", r.ID)
	}
	sum := sha256.Sum256(body)
	return traceSubject(r.ID), "trace:" + r.ID + ":" + hex.EncodeToString(sum[:8]), nil
}

// Add stores r in the stream, replacing the record of the same ID; while
// NATS is away, in the spool, to be sent when it answers. It returns once
// the record is in one or the other.
func (t *Traces) Add(r traces.Record) error {
	if !validID(r.ID) {
		return fmt.Errorf("traces: %q is not a request ID", r.ID)
	}
	b, err := traces.Encode(&r)
	if err != nil {
		return err
	}
	subject, id, err := traceAddress(b)
	if err != nil {
		return err
	}
	if err := t.box.commit(context.Background(), &letter{subject: subject, id: id, body: b}); err != nil {
		return fmt.Errorf("cluster: keep the trace of %s: %w", r.ID, err)
	}
	return nil
}

// Spooled is how many records wait for NATS.
func (t *Traces) Spooled() int { return int(t.box.waiting.Load()) }

// Close stops sending records after one last short attempt; what is left
// stays in the spool for the next run.
func (t *Traces) Close() error {
	t.box.close()
	return nil
}

// Get returns the record of id, or traces.ErrNotFound.
func (t *Traces) Get(id string) (traces.Record, error) {
	if !validID(id) {
		return traces.Record{}, traces.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := t.stream.GetLastMsgForSubject(ctx, traceSubject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return traces.Record{}, traces.ErrNotFound
	}
	if err != nil {
		return traces.Record{}, fmt.Errorf("cluster: read the trace of %s: %w", id, err)
	}
	var r traces.Record
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return traces.Record{}, fmt.Errorf("cluster: the trace of %s is unreadable: %w", id, err)
	}
	return r, nil
}

// Recent returns up to n of the newest records (at most the store's Keep),
// newest first. With NATS away it returns none.
func (t *Traces) Recent(n int) []traces.Record {
	n = min(n, t.keep)
	if n <= 0 || !t.nc.IsConnected() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := t.stream.Info(ctx)
	if err != nil {
		t.log.Warn("cluster: the trace stream is unreadable", "err", err)
		return nil
	}
	out := make([]traces.Record, 0, n)
	last, first := info.State.LastSeq, info.State.FirstSeq
	for seq, read := last, 0; seq >= first && seq > 0 && len(out) < n && read < recentScan*n; seq, read = seq-1, read+1 {
		m, err := t.stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // replaced by a newer record of its request
		}
		if err != nil {
			t.log.Warn("cluster: a trace is unreadable; skipped", "seq", seq, "err", err)
			continue
		}
		var r traces.Record
		if json.Unmarshal(m.Data, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// validID reports whether id can name a subject: a request ID of letters,
// digits, '-' and '_' (no '.', '*' or '>', which NATS reads as structure).
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
