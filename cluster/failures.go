package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot/failures"
)

// FailureBucket is the KV bucket of failure cases, one key per tool.
const FailureBucket = "adaptbot_failures"

// maxUpdateTries bounds the compare-and-set retries of one tool's update
// when other replicas write it at the same moment.
const maxUpdateTries = 10

// Failures keeps every tool's failure cases in FailureBucket: a
// failures.Backend for each replica's failures.Store, so every replica
// records the cases it sees and shows those of all. Each update is a
// compare-and-set on the tool's key, so replicas recording at once lose no
// count; Follow brings the other replicas' writes into the store.
type Failures struct {
	kv  jetstream.KeyValue
	nc  *nats.Conn
	log *slog.Logger
}

var _ failures.Backend = (*Failures)(nil)

// OpenFailures creates the bucket if need be.
func OpenFailures(ctx context.Context, nc *nats.Conn, log *slog.Logger) (*Failures, error) {
	if log == nil {
		log = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: FailureBucket, Description: "AdaptBot failure cases, one key per tool", History: 1, Storage: jetstream.FileStorage,
		Replicas: replicasFor(ctx, js, "KV_"+FailureBucket)})
	if err != nil {
		return nil, fmt.Errorf("cluster: the failure bucket: %w", err)
	}
	return &Failures{kv: kv, nc: nc, log: log}, nil
}

// Load returns every tool's state in the bucket.
func (f *Failures) Load(ctx context.Context) (map[string]failures.State, error) {
	out := map[string]failures.State{}
	keys, err := f.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: list failure cases: %w", err)
	}
	for k := range keys.Keys() {
		st, _, err := f.get(ctx, k)
		if err != nil {
			f.log.Warn("cluster: a tool's failure cases are unreadable; skipped", "tool", k, "err", err)
			continue
		}
		out[k] = st
	}
	return out, nil
}

// Update applies change to the tool's state in the bucket by compare-and-
// set, trying again when another replica wrote it in between.
func (f *Failures) Update(ctx context.Context, tool string, change func(failures.State) failures.State) (failures.State, error) {
	if !f.nc.IsConnected() {
		return failures.State{}, ErrDown
	}
	for range maxUpdateTries {
		cur, rev, err := f.get(ctx, tool)
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return failures.State{}, err
		}
		next := change(cur)
		b, err := json.Marshal(next)
		if err != nil {
			return failures.State{}, fmt.Errorf("cluster: %w", err)
		}
		if rev == 0 {
			_, err = f.kv.Create(ctx, tool, b)
		} else {
			_, err = f.kv.Update(ctx, tool, b, rev)
		}
		switch {
		case err == nil:
			return next, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue // another replica wrote it: read again
		default:
			return failures.State{}, fmt.Errorf("cluster: write the failure cases of %s: %w", tool, err)
		}
	}
	return failures.State{}, fmt.Errorf("cluster: the failure cases of %s changed %d times while being written; trying later", tool, maxUpdateTries)
}

// get reads a tool's state and its revision (0: none).
func (f *Failures) get(ctx context.Context, tool string) (failures.State, uint64, error) {
	e, err := f.kv.Get(ctx, tool)
	if err != nil {
		return failures.State{Tool: tool}, 0, err
	}
	var st failures.State
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		// Unreadable: the next write replaces it.
		return failures.State{Tool: tool}, e.Revision(), fmt.Errorf("cluster: failure cases of %s: %w", tool, err)
	}
	st.Tool = tool
	return st, e.Revision(), nil
}

// Follow brings every write to the bucket, this replica's and the others',
// into store until ctx ends; after a reconnect it watches again, and the
// new watch's first values bring what changed meanwhile.
func (f *Failures) Follow(ctx context.Context, store *failures.Store) error {
	w, err := newWatch(f.nc, func() (jetstream.KeyWatcher, error) { return f.kv.WatchAll(ctx) })
	if err != nil {
		return fmt.Errorf("cluster: watch the failure cases: %w", err)
	}
	return w.each(ctx, "failure case", func(u jetstream.KeyValueEntry) {
		if u == nil || u.Operation() != jetstream.KeyValuePut {
			return
		}
		var st failures.State
		if err := json.Unmarshal(u.Value(), &st); err != nil {
			f.log.Warn("cluster: a tool's failure cases are unreadable; skipped", "tool", u.Key(), "err", err)
			return
		}
		store.Replace(u.Key(), st)
	})
}
