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
//
// The bucket's revisions order the changes of a tool. Each change is
// written by compare-and-set over the revision it was made on: for a change
// made under the tool's cluster lock, the bucket's newest (read under the
// lock); for a hand edit, the revision this replica served when it was
// made. A change made while NATS was away (or whose write timed out) waits,
// and is written when NATS is back if the tool is still at that revision;
// if another replica changed the tool meanwhile, that change wins, serves
// here too, and this replica's stays in its history (tools/.history). A
// write delayed in the network and delivered late is refused the same way,
// so it never undoes a later change.
type Mirror struct {
	nc      *nats.Conn
	kv      jetstream.KeyValue
	kvs     jetstream.Stream // the bucket's stream, for revisions of deleted keys
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
	// base is, per tool, the bucket's revision this replica's state of it
	// stands on: the last change the watch applied, or this replica wrote.
	base map[string]uint64
	// pending are local changes not yet written to the cluster: name →
	// the revision they were made over; retried until written or
	// overtaken.
	pending map[string]uint64
	// stale are tools whose change from the bucket could not be applied
	// for a reason that passes (NATS did not answer): read and applied
	// again on the next tick.
	stale map[string]bool
	// held counts the cluster locks this replica holds, per tool;
	// orphans are locks of its own it may have left (a write that timed
	// out may still land), deleted once NATS answers.
	held    map[string]int
	orphans map[string]bool
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
		applying: map[string]string{}, base: map[string]uint64{}, pending: map[string]uint64{}, stale: map[string]bool{},
		held: map[string]int{}, orphans: map[string]bool{}, kick: make(chan struct{}, 1)}
	if m.kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ToolBucket, Description: "AdaptBot registry entries", History: 5, Storage: jetstream.FileStorage,
		Replicas: replicasFor(ctx, js, "KV_"+ToolBucket)}); err != nil {
		return nil, fmt.Errorf("cluster: the tool bucket: %w", err)
	}
	if m.locks, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LockBucket, Description: "AdaptBot build locks", History: 1, Storage: jetstream.FileStorage,
		Replicas: replicasFor(ctx, js, "KV_"+LockBucket)}); err != nil {
		return nil, fmt.Errorf("cluster: the lock bucket: %w", err)
	}
	if m.obs, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SourceStore, Description: "AdaptBot tool sources, every version", Storage: jetstream.FileStorage,
		Replicas: replicasFor(ctx, js, "OBJ_"+SourceStore)}); err != nil {
		return nil, fmt.Errorf("cluster: the source store: %w", err)
	}
	if m.kvs, err = js.Stream(ctx, "KV_"+ToolBucket); err != nil {
		return nil, fmt.Errorf("cluster: the tool bucket: %w", err)
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
			// Another replica seeding at the same moment wins a tool
			// both hold: the watch brings its version here.
			if _, err := m.push(ctx, e.Name, 0); err != nil && !conflict(err) {
				return nil, fmt.Errorf("cluster: seed %s: %w", e.Name, err)
			}
			n++
		}
		m.log.Info("cluster: seeded an empty cluster from this replica's tools", "tools", n)
	}
	m.freeOwnLocks(ctx)
	local.OnChange(m.onLocal)
	return m, nil
}

// onLocal writes a change of the local registry to the cluster, unless the
// watch made it.
func (m *Mirror) onLocal(ev registry.Event) {
	name := ev.Entry.Name
	m.mu.Lock()
	sha, mine := m.applying[name]
	base, waiting := m.pending[name]
	if !waiting {
		base = m.base[name]
	}
	locked := m.held[name] > 0
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
	// This runs inside the registry's write, so no change from the bucket
	// applies meanwhile. The change is marked waiting before it is
	// written: a change the watch brings over the revision it was made on
	// must not undo it while NATS is slow to answer (latest). A second
	// change while one waits stands on the first's revision.
	connected := m.nc.IsConnected()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if locked && connected && !waiting {
		// Under the lock, the bucket's newest: a watch that lags must not
		// make the change look overtaken.
		if rev, err := m.revision(ctx, name); err == nil {
			base = rev
		}
	}
	m.mu.Lock()
	m.pending[name] = base
	m.mu.Unlock()
	if waiting {
		return
	}
	err := errors.New("NATS is not connected")
	if connected {
		_, err = m.write(ctx, name, base, false)
	}
	switch {
	case err == nil:
		m.mu.Lock()
		if b, ok := m.pending[name]; ok && b == base {
			delete(m.pending, name)
		}
		m.mu.Unlock()
	case conflict(err):
		m.overtaken(name)
	default:
		m.log.Warn("cluster: a change is not in the cluster yet; retrying", "tool", name, "err", err)
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
}

// write writes the local state of name over revision base, or over the
// bucket's newest when this replica holds the tool's lock (so a watch that
// lags does not make the change look overtaken); it returns the revision
// it wrote over. A conflict means another change came first.
func (m *Mirror) write(ctx context.Context, name string, base uint64, locked bool) (uint64, error) {
	if locked {
		rev, err := m.revision(ctx, name)
		if err != nil {
			return base, err
		}
		base = rev
	}
	rev, err := m.push(ctx, name, base)
	if err == nil {
		m.mu.Lock()
		m.base[name] = max(m.base[name], rev)
		m.mu.Unlock()
	}
	return base, err
}

// overtaken notes that a change of this replica's lost to one another
// replica wrote first: the cluster's serves, brought by the watch (or read
// again, if the watch has gone past it), and this replica's stays in its
// history.
func (m *Mirror) overtaken(name string) {
	m.log.Warn("cluster: another replica changed this tool first; its change serves here too, and this replica's stays in its history", "tool", name)
	m.mu.Lock()
	delete(m.pending, name)
	m.stale[name] = true
	m.mu.Unlock()
}

// conflict reports whether a compare-and-set failed: the key is not at the
// revision written over.
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// revision is the bucket's newest revision of name, a put or a delete (0:
// none).
func (m *Mirror) revision(ctx context.Context, name string) (uint64, error) {
	msg, err := m.kvs.GetLastMsgForSubject(ctx, "$KV."+ToolBucket+"."+name)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return msg.Sequence, nil
}

// push writes the local registry's state of name to the cluster, its
// serving version or its absence, by compare-and-set over revision base (0:
// the bucket holds no such tool); it returns the revision written.
func (m *Mirror) push(ctx context.Context, name string, base uint64) (uint64, error) {
	t, ok := m.local.Tool(name)
	if !ok {
		if base == 0 {
			return 0, nil // never in the cluster
		}
		if err := m.kv.Delete(ctx, name, jetstream.LastRevision(base)); err != nil {
			return 0, err
		}
		rev, err := m.revision(ctx, name)
		if err != nil {
			return 0, nil // deleted; the watch brings the delete's revision
		}
		return rev, nil
	}
	if _, err := m.obs.GetInfo(ctx, sourceName(name, t.SHA256)); errors.Is(err, jetstream.ErrObjectNotFound) {
		if _, err := m.obs.PutBytes(ctx, sourceName(name, t.SHA256), t.Code); err != nil {
			return 0, err
		}
	} else if err != nil {
		return 0, err
	}
	rec := toolRecord{Name: name, SHA256: t.SHA256, Category: t.Category, Origin: t.Origin, Examples: m.local.Examples(name), Note: m.note(name, t.Version), Replica: m.replica, At: time.Now().UTC()}
	if !json.Valid(rec.Examples) {
		rec.Examples = nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	if base == 0 {
		return m.kv.Create(ctx, name, b)
	}
	return m.kv.Update(ctx, name, b, base)
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
			m.resync(ctx)
			m.clearOrphans(ctx)
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
							m.follow(ctx, e.Name, nil, 0)
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
				m.follow(ctx, u.Key(), &rec, u.Revision())
			default: // deleted or purged
				m.follow(ctx, u.Key(), nil, u.Revision())
			}
			m.done.Store(u.Revision())
		}
	}
}

// errOvertaken stops applying a change of the cluster that a newer one has
// overtaken.
var errOvertaken = errors.New("cluster: a newer change of the tool is in the cluster")

// errWaiting stops applying a change of the cluster over which a change of
// this replica's waits to be written.
var errWaiting = errors.New("cluster: a change of this replica's waits over it")

// errAsk wraps a failure to ask NATS: the change is applied again later.
var errAsk = errors.New("cluster: NATS did not answer")

// follow takes the bucket's change of name at revision rev (rec nil: a
// delete; rev 0: the bucket does not hold name) into the local registry,
// unless a change of this replica's made over that revision waits to be
// written: then that change stands, and is written when NATS answers. A
// change from the bucket newer than the one a waiting change was made over
// wins over it.
func (m *Mirror) follow(ctx context.Context, name string, rec *toolRecord, rev uint64) {
	err := m.apply(ctx, name, rec, rev)
	m.mu.Lock()
	defer m.mu.Unlock()
	if errors.Is(err, errAsk) {
		m.stale[name] = true
		return
	}
	delete(m.stale, name)
	m.base[name] = max(m.base[name], rev)
}

// resync reads again, and applies, the tools whose change from the bucket
// did not apply for want of NATS.
func (m *Mirror) resync(ctx context.Context) {
	m.mu.Lock()
	names := make([]string, 0, len(m.stale))
	for n := range m.stale {
		names = append(names, n)
	}
	m.mu.Unlock()
	if len(names) == 0 || !m.nc.IsConnected() {
		return
	}
	for _, n := range names {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		e, err := m.kv.Get(gctx, n)
		var rec *toolRecord
		var rev uint64
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			rev, err = m.revision(gctx, n)
		case err == nil:
			rec, rev = &toolRecord{}, e.Revision()
			if jerr := json.Unmarshal(e.Value(), rec); jerr != nil {
				m.log.Warn("cluster: a tool entry is unreadable; skipped", "tool", n, "err", jerr)
				rec = nil
			}
		}
		cancel()
		if err != nil {
			return
		}
		m.follow(ctx, n, rec, rev)
	}
}

// apply makes the local registry serve rec (nil: not serve name), the
// change at revision rev of the bucket (0: the bucket does not hold name).
// It fails (errAsk) only when NATS did not answer; a change that fails its
// checks here is logged, and not tried again.
func (m *Mirror) apply(ctx context.Context, name string, rec *toolRecord, rev uint64) error {
	cur, has := m.local.Tool(name)
	if rec == nil {
		if !has {
			return nil
		}
		m.mark(name, "")
		defer m.unmark(name)
		_, err := m.local.DeleteIf(ctx, name, m.latest(ctx, name, rev, false))
		switch {
		case err == nil, errors.Is(err, registry.ErrNotFound), errors.Is(err, errOvertaken), errors.Is(err, errWaiting):
			return nil
		case errors.Is(err, errAsk):
			return err
		default:
			m.log.Warn("cluster: a delete from the cluster was not applied here", "tool", name, "err", err)
			return nil
		}
	}
	if has && cur.SHA256 == rec.SHA256 {
		return nil
	}
	src, err := m.obs.GetBytes(ctx, sourceName(name, rec.SHA256))
	if err != nil {
		m.log.Warn("cluster: a tool's source is not in the store yet; trying again", "tool", name, "sha256", rec.SHA256, "err", err)
		return fmt.Errorf("%w: %w", errAsk, err)
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
	switch _, err := m.local.Put(ctx, name, src, o); {
	case err == nil, errors.Is(err, errOvertaken), errors.Is(err, errWaiting):
	case errors.Is(err, errAsk):
		return err
	default:
		m.log.Warn("cluster: a tool from the cluster fails its checks here", "tool", name, "replica", rec.Replica, "err", err)
	}
	return nil
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
		// A change of this replica's waits to be written: it stands
		// against the revision it was made on, and loses to a newer one.
		m.mu.Lock()
		b, waiting := m.pending[name]
		m.mu.Unlock()
		if waiting && (rev == 0 || rev <= b) {
			return errWaiting
		}
		if waiting {
			m.overtaken(name)
		}
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
			return fmt.Errorf("%w: %w", errAsk, err)
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

// retryPending writes the changes that wait, each over the revision it was
// made on; one another replica overtook meanwhile loses.
func (m *Mirror) retryPending(ctx context.Context) {
	m.mu.Lock()
	waiting := make(map[string]uint64, len(m.pending))
	for n, b := range m.pending {
		waiting[n] = b
	}
	m.mu.Unlock()
	if len(waiting) == 0 || !m.nc.IsConnected() {
		return
	}
	for n, b := range waiting {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := m.write(pctx, n, b, false)
		cancel()
		switch {
		case err == nil:
			m.mu.Lock()
			if m.pending[n] == b {
				delete(m.pending, n)
			}
			m.mu.Unlock()
			m.log.Info("cluster: a change made while NATS was away is in the cluster now", "tool", n)
		case conflict(err):
			m.overtaken(n)
		default:
			return
		}
	}
}
