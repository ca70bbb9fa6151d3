package cluster

import (
	"context"
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

// Traces keeps the records of recent requests in TraceStream, with the
// bounds of a trace file (traces.Options): a record written through one
// replica is read through any other, so a rating needs no sticky session.
// It implements what the service needs of a trace store.
type Traces struct {
	stream jetstream.Stream
	js     jetstream.JetStream
	nc     *nats.Conn
	keep   int
	log    *slog.Logger
}

// OpenTraces creates the stream if need be, bounded as opts bounds a trace
// file: about twice MaxBytes in all, the oldest going first.
func OpenTraces(ctx context.Context, nc *nats.Conn, opts traces.Options, log *slog.Logger) (*Traces, error) {
	if log == nil {
		log = slog.Default()
	}
	opts = opts.WithDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              TraceStream,
		Description:       "AdaptBot request records: traces and ratings, the newest per request",
		Subjects:          []string{traceSubjects},
		MaxMsgsPerSubject: 1,
		MaxBytes:          2 * opts.MaxBytes,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: the trace stream: %w", err)
	}
	return &Traces{stream: s, js: js, nc: nc, keep: opts.Keep, log: log}, nil
}

// Add stores r in the stream, replacing the record of the same ID.
func (t *Traces) Add(r traces.Record) error {
	if !validID(r.ID) {
		return fmt.Errorf("traces: %q is not a request ID", r.ID)
	}
	b, err := traces.Encode(&r)
	if err != nil {
		return err
	}
	if !t.nc.IsConnected() {
		return ErrDown
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := t.js.Publish(ctx, traceSubject(r.ID), b); err != nil {
		return fmt.Errorf("cluster: keep the trace of %s: %w", r.ID, err)
	}
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
