package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"adaptbot"
	"adaptbot/registry"
)

// The registry's names in JetStream.
const (
	// ToolBucket is the KV bucket of registry entries, one key per tool.
	ToolBucket = "adaptbot_tools"
	// SourceStore is the object store of tool sources, every version a
	// replica accepted, by tool and content hash (NAME/SHA256).
	SourceStore = "adaptbot_sources"
	// LockBucket holds build locks, one key per tool while it is written.
	LockBucket = "adaptbot_locks"
)

// Local is what a Mirror needs of the replica's own registry; a
// *registry.Registry is one.
type Local interface {
	List() []registry.Entry
	Tool(name string) (registry.Tool, bool)
	Examples(name string) []byte
	Versions(name string) ([]registry.Version, error)
	Put(ctx context.Context, name string, src []byte, o registry.PutOptions) (registry.Entry, error)
	DeleteIf(ctx context.Context, name string, cond func() error) (registry.Entry, error)
	OnChange(fn func(registry.Event))
}

var _ Local = (*registry.Registry)(nil)

// toolRecord is a tool's entry in ToolBucket: enough to fetch and accept
// the version that serves.
type toolRecord struct {
	Name     string          `json:"name"`
	SHA256   string          `json:"sha256"`
	Category string          `json:"category"`
	Origin   adaptbot.Origin `json:"origin"`
	Examples json.RawMessage `json:"examples,omitempty"`
	// Note is what the serving version's maker said of it (a repair lists
	// the cases it fixed), so that every replica's history says it too.
	Note    string    `json:"note,omitempty"`
	Replica string    `json:"replica"`
	At      time.Time `json:"at"`
}

func sourceName(tool, sha string) string { return tool + "/" + sha }

// MirrorOptions configures a Mirror.
type MirrorOptions struct {
	// Replica names this replica in the entries it writes.
	Replica string
	// Log receives what could not be applied; nil means slog.Default().
	Log *slog.Logger
}

// Mirror keeps a replica's registry and the cluster's one and the same: a
// change accepted here (a build, a delete, a rollback, a hand edit the file
// watch took) is written to the bucket and the object store; a change any
// other replica wrote arrives by the bucket's watch and is accepted here,
// checked like any other version, within a moment and without a restart.
// The bucket is the truth: when the two differ at start, the cluster's
// version wins, and an empty cluster is seeded from this replica.
type Mirror struct {
	nc      *nats.Conn
	kv      jetstream.KeyValue
	locks   jetstream.KeyValue
	obs     jetstream.ObjectStore
	local   Local
	replica string
	log     *slog.Logger

	mu sync.Mutex
	// applying holds the changes the watch is making to the local
	// registry (name → sha256, "" for a delete), so that their change
	// events are not written back.
	applying map[string]string
	// pending are local changes not yet written to the cluster (NATS was
	// away): name → true; retried until they are.
	pending map[string]bool
	kick    chan struct{}
	// done is the bucket's revision of the last change the watch has
	// handled.
	done atomic.Uint64
}

// OpenMirror creates the bucket and store if need be, seeds an empty
// cluster from local, and starts following local's changes. Call Run to
// follow the cluster's.
func OpenMirror(ctx context.Context, nc *nats.Conn, local Local, opts MirrorOptions) (*Mirror, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	m := &Mirror{nc: nc, local: local, replica: opts.Replica, log: opts.Log,
		applying: map[string]string{}, pending: map[string]bool{}, kick: make(chan struct{}, 1)}
	if m.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ToolBucket, Description: "AdaptBot registry entries", History: 5, Storage: jetstream.FileStorage}); err != nil {
		return nil, fmt.Errorf("cluster: the tool bucket: %w", err)
	}
	if m.locks, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LockBucket, Description: "AdaptBot build locks", History: 1, Storage: jetstream.FileStorage}); err != nil {
		return nil, fmt.Errorf("cluster: the lock bucket: %w", err)
	}
	if m.obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SourceStore, Description: "AdaptBot tool sources, every version", Storage: jetstream.FileStorage}); err != nil {
		return nil, fmt.Errorf("cluster: the source store: %w", err)
	}
	keys, err := m.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: list tools: %w", err)
	}
	empty := true
	for range keys.Keys() {
		empty = false
	}
	if empty {
		n := 0
		for _, e := range local.List() {
			if e.Status != registry.OK && e.SHA256 == "" {
				continue
			}
			if err := m.push(ctx, e.Name); err != nil {
				return nil, fmt.Errorf("cluster: seed %s: %w", e.Name, err)
			}
			n++
		}
		m.log.Info("cluster: seeded an empty cluster from this replica's tools", "tools", n)
	}
	local.OnChange(m.onLocal)
	return m, nil
}

// onLocal writes a change of the local registry to the cluster, unless the
// watch made it.
func (m *Mirror) onLocal(ev registry.Event) {
	name := ev.Entry.Name
	m.mu.Lock()
	sha, mine := m.applying[name]
	m.mu.Unlock()
	switch ev.Kind {
	case registry.Added, registry.Updated:
		if mine && sha == ev.Entry.SHA256 {
			return
		}
	case registry.Removed:
		if mine && sha == "" {
			return
		}
	default:
		return // a failed hand edit changes nothing that serves
	}
	// This runs inside the registry's write: do not wait on a NATS that
	// is away, leave the change for the retry.
	err := errors.New("NATS is not connected")
	if m.nc.IsConnected() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = m.push(ctx, name)
		cancel()
	}
	if err != nil {
		m.log.Warn("cluster: a change is not in the cluster yet; retrying", "tool", name, "err", err)
		m.mu.Lock()
		m.pending[name] = true
		m.mu.Unlock()
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// push writes the local registry's state of name to the cluster: its
// serving version, or its absence.
func (m *Mirror) push(ctx context.Context, name string) error {
	t, ok := m.local.Tool(name)
	if !ok {
		err := m.kv.Delete(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		return err
	}
	if _, err := m.obs.GetInfo(ctx, sourceName(name, t.SHA256)); errors.Is(err, jetstream.ErrObjectNotFound) {
		if _, err := m.obs.PutBytes(ctx, sourceName(name, t.SHA256), t.Code); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	rec := toolRecord{Name: name, SHA256: t.SHA256, Category: t.Category, Origin: t.Origin, Examples: m.local.Examples(name), Note: m.note(name, t.Version), Replica: m.replica, At: time.Now().UTC()}
	if !json.Valid(rec.Examples) {
		rec.Examples = nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = m.kv.Put(ctx, name, b)
	return err
}

// note is what the local history says of version v of name, if anything.
func (m *Mirror) note(name string, v int) string {
	vs, _ := m.local.Versions(name)
	for _, x := range vs {
		if x.Version == v {
			return x.Note
		}
	}
	return ""
}

// Run follows the cluster's changes into the local registry until ctx
// ends; ready is closed once the cluster's state at start is applied (nil
// is allowed). Tools here that the cluster does not hold are removed then:
// the cluster is the truth.
func (m *Mirror) Run(ctx context.Context, ready chan<- struct{}) error {
	w, err := newWatch(m.nc, func() (jetstream.KeyWatcher, error) { return m.kv.WatchAll(ctx) })
	if err != nil {
		return fmt.Errorf("cluster: watch the tools: %w", err)
	}
	defer w.stop()
	seen := map[string]bool{}
	initial := true
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.kick:
		case <-retry.C:
			m.retryPending(ctx)
			w.renew()
		case u, ok := <-w.Updates():
			if !ok {
				return errors.New("cluster: the tool watch ended")
			}
			if u == nil { // the initial values are all in
				if initial {
					initial = false
					for _, e := range m.local.List() {
						if !seen[e.Name] {
							m.apply(ctx, e.Name, nil, 0)
						}
					}
					if ready != nil {
						close(ready)
					}
				}
				continue
			}
			seen[u.Key()] = true
			switch u.Operation() {
			case jetstream.KeyValuePut:
				var rec toolRecord
				if err := json.Unmarshal(u.Value(), &rec); err != nil {
					m.log.Warn("cluster: a tool entry is unreadable; skipped", "tool", u.Key(), "err", err)
					break
				}
				m.apply(ctx, u.Key(), &rec, u.Revision())
			default: // deleted or purged
				m.apply(ctx, u.Key(), nil, u.Revision())
			}
			m.done.Store(u.Revision())
		}
	}
}

// errOvertaken stops applying a change of the cluster that a newer one has
// overtaken.
var errOvertaken = errors.New("cluster: a newer change of the tool is in the cluster")

// apply makes the local registry serve rec (nil: not serve name), the
// change at revision rev of the bucket (0: the bucket does not hold name).
func (m *Mirror) apply(ctx context.Context, name string, rec *toolRecord, rev uint64) {
	cur, has := m.local.Tool(name)
	if rec == nil {
		if !has {
			return
		}
		m.mark(name, "")
		defer m.unmark(name)
		_, err := m.local.DeleteIf(ctx, name, m.latest(ctx, name, rev, false))
		switch {
		case err == nil, errors.Is(err, registry.ErrNotFound), errors.Is(err, errOvertaken):
		default:
			m.log.Warn("cluster: a delete from the cluster was not applied here", "tool", name, "err", err)
		}
		return
	}
	if has && cur.SHA256 == rec.SHA256 {
		return
	}
	src, err := m.obs.GetBytes(ctx, sourceName(name, rec.SHA256))
	if err != nil {
		m.log.Warn("cluster: a tool's source is not in the store", "tool", name, "sha256", rec.SHA256, "err", err)
		return
	}
	m.mark(name, rec.SHA256)
	defer m.unmark(name)
	// The bucket holds serving versions only: one approved where it was
	// made (review mode) serves here without a second approval.
	// It was checked where it was made, and the tools it calls may come
	// after it.
	o := registry.PutOptions{Origin: rec.Origin, Category: rec.Category, Approved: true, Replicated: true}
	if len(rec.Examples) > 0 {
		o.Examples = rec.Examples
	}
	o.Note = rec.Note
	o.If = m.latest(ctx, name, rev, true)
	if _, err := m.local.Put(ctx, name, src, o); errors.Is(err, errOvertaken) {
		return
	} else if err != nil {
		m.log.Warn("cluster: a tool from the cluster fails its checks here", "tool", name, "replica", rec.Replica, "err", err)
	}
}

// latest is the condition of applying the change at revision rev of name
// (present false: its delete, or its absence when rev is 0): that it is
// still the bucket's newest. The registry asks it under its write lock,
// when every local change before has been written to the bucket. Without
// it, a replica that changes a tool twice in quick succession would, as its
// watch brings back its own first change, serve that again for a moment
// and keep it in history as a new version.
func (m *Mirror) latest(ctx context.Context, name string, rev uint64, present bool) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		e, err := m.kv.Get(ctx, name)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			if present {
				return errOvertaken // deleted since
			}
			return nil
		case err != nil:
			return err
		case !present || e.Revision() != rev:
			return errOvertaken
		}
		return nil
	}
}

func (m *Mirror) mark(name, sha string) {
	m.mu.Lock()
	m.applying[name] = sha
	m.mu.Unlock()
}

func (m *Mirror) unmark(name string) {
	m.mu.Lock()
	delete(m.applying, name)
	m.mu.Unlock()
}

func (m *Mirror) retryPending(ctx context.Context) {
	m.mu.Lock()
	names := make([]string, 0, len(m.pending))
	for n := range m.pending {
		names = append(names, n)
	}
	m.mu.Unlock()
	if len(names) == 0 || !m.nc.IsConnected() {
		return
	}
	for _, n := range names {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := m.push(pctx, n)
		cancel()
		if err != nil {
			return
		}
		m.mu.Lock()
		delete(m.pending, n)
		m.mu.Unlock()
		m.log.Info("cluster: a change made while NATS was away is in the cluster now", "tool", n)
	}
}

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

type lockRecord struct {
	Holder  string    `json:"holder"`
	Expires time.Time `json:"expires"`
}

// Lock takes the cluster-wide lock on a tool's name by compare-and-set on
// LockBucket, so no two replicas change one tool at once; a lock its holder
// left (a crash) expires after ttl. It returns the release.
func (m *Mirror) Lock(ctx context.Context, name string, ttl time.Duration) (func(), error) {
	return Lock(ctx, m.locks, name, m.replica, ttl)
}

// Lock is Mirror.Lock on any bucket.
func Lock(ctx context.Context, kv jetstream.KeyValue, name, holder string, ttl time.Duration) (func(), error) {
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
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		kv.Delete(ctx, name, jetstream.LastRevision(rev)) //nolint:errcheck // an expired lock is taken over anyway
	}, nil
}
