package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrLocked is returned by Lock when another writer holds the tool.
var ErrLocked = errors.New("being changed elsewhere")

// LockedError says who holds a tool's lock.
type LockedError struct {
	Tool, Holder string
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("tool %s is being changed by %s; try again when that is done", e.Tool, e.Holder)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// unansweredError refuses a change because NATS did not answer in time: it
// is ErrDown to the caller (503, try again), with the cause.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string {
	return "NATS did not answer in time (" + e.err.Error() + "), so the other replicas would not see this change: try again in a moment"
}

func (e *unansweredError) Is(target error) bool { return target == ErrDown }
func (e *unansweredError) Unwrap() error        { return e.err }

type lockRecord struct {
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

// lockWait bounds how long taking a lock waits on NATS.
const lockWait = 5 * time.Second

// Lock takes the cluster-wide lock on a tool's name by compare-and-set on
// LockBucket, so no two replicas change one tool at once; a lock its holder
// left (a crash) expires after ttl. It returns the release. When NATS does
// not answer in time the change is refused as ErrDown; the lock's write may
// still land later, so the mirror deletes any lock of this replica's that
// it does not hold once NATS answers again.
func (m *Mirror) Lock(ctx context.Context, name string, ttl time.Duration) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	release, err := lock(ctx, m.locks, name, m.replica, ttl)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, err
		}
		m.orphan(name)
		return nil, &unansweredError{err}
	}
	m.mu.Lock()
	m.held[name]++
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		if m.held[name]--; m.held[name] <= 0 {
			delete(m.held, name)
		}
		m.mu.Unlock()
		if err := release(); err != nil {
			m.orphan(name)
		}
	}, nil
}

// orphan notes a lock of this replica's that may be left in the bucket.
func (m *Mirror) orphan(name string) {
	m.mu.Lock()
	m.orphans[name] = true
	m.mu.Unlock()
}

// freeOwnLocks deletes, at start, the locks that name this replica: it
// holds none yet, so they are a crashed run's (a replica killed mid-build),
// which would block their tools until they expire. A replica named by
// host and process id (no ADAPTBOT_REPLICA_ID) has a new name each run and
// finds none.
func (m *Mirror) freeOwnLocks(ctx context.Context) {
	keys, err := m.locks.ListKeys(ctx)
	if err != nil {
		return
	}
	for k := range keys.Keys() {
		if e, err := m.locks.Get(ctx, k); err == nil {
			var lr lockRecord
			if json.Unmarshal(e.Value(), &lr) == nil && lr.Holder == m.replica {
				m.orphan(k)
			}
		}
	}
	m.clearOrphans(ctx)
}

// clearOrphans deletes the locks this replica may have left and does not
// hold, so that a tool is not blocked until the lock expires.
func (m *Mirror) clearOrphans(ctx context.Context) {
	m.mu.Lock()
	var names []string
	for n := range m.orphans {
		if m.held[n] == 0 {
			names = append(names, n)
		}
	}
	m.mu.Unlock()
	if len(names) == 0 || !m.nc.IsConnected() {
		return
	}
	for _, n := range names {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		e, err := m.locks.Get(gctx, n)
		var lr lockRecord
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			err = nil
		case err == nil:
			if json.Unmarshal(e.Value(), &lr) == nil && lr.Holder == m.replica {
				err = m.locks.Delete(gctx, n, jetstream.LastRevision(e.Revision()))
				if err == nil {
					m.log.Info("cluster: deleted a lock this replica left while NATS did not answer", "tool", n)
				} else if conflict(err) {
					err = nil // taken or released meanwhile
				}
			}
		}
		cancel()
		if err != nil {
			return
		}
		m.mu.Lock()
		if m.held[n] == 0 {
			delete(m.orphans, n)
		}
		m.mu.Unlock()
	}
}

// Lock is Mirror.Lock on any bucket.
func Lock(ctx context.Context, kv jetstream.KeyValue, name, holder string, ttl time.Duration) (func(), error) {
	release, err := lock(ctx, kv, name, holder, ttl)
	if err != nil {
		return nil, err
	}
	return func() { release() }, nil //nolint:errcheck // an expired lock is taken over anyway
}

func lock(ctx context.Context, kv jetstream.KeyValue, name, holder string, ttl time.Duration) (func() error, error) {
	b, _ := json.Marshal(lockRecord{Holder: holder, Expires: time.Now().Add(ttl)})
	rev, err := kv.Create(ctx, name, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		cur, gerr := kv.Get(ctx, name)
		if gerr != nil {
			return nil, gerr
		}
		var lr lockRecord
		json.Unmarshal(cur.Value(), &lr) //nolint:errcheck // unreadable counts as expired
		if time.Now().Before(lr.Expires) {
			return nil, &LockedError{Tool: name, Holder: lr.Holder}
		}
		// Expired: take it over, unless someone else just did.
		rev, err = kv.Update(ctx, name, b, cur.Revision())
		if err != nil {
			return nil, &LockedError{Tool: name, Holder: "another replica"}
		}
	} else if err != nil {
		return nil, err
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return kv.Delete(ctx, name, jetstream.LastRevision(rev))
	}, nil
}
