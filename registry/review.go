package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"adaptbot"
	"adaptbot/contract"
)

// Review before serving (Options.Review): a new version is kept in history
// and recorded on the entry as pending (Status Pending, PendingVersion,
// PendingSHA256), but does not serve until Approve. While a modification is
// pending, the previous version keeps serving, and the entry keeps
// describing it; a new tool serves nothing, so it is never offered to a
// model. A later version replaces the pending one; a hand edit back to the
// serving source drops it.

// ErrNotPending is returned by Approve for a tool with nothing to approve.
var ErrNotPending = errors.New("no version is waiting for approval")

// holdLocked records e, a version that passed its checks and is in history,
// as pending on rec (nil for a new tool). The caller holds the file lock.
func (r *Registry) holdLocked(rec *record, e Entry) *Event {
	now := r.opts.Now().UTC()
	var held record
	if rec != nil && rec.code != nil {
		held = record{entry: rec.entry, code: rec.code}
	} else {
		// Nothing serves: the entry describes the pending version, but names
		// no version and no hash, so nothing loads it.
		held = record{entry: e}
		held.entry.Version, held.entry.SHA256 = 0, ""
		if rec != nil {
			held.entry.CreatedAt = rec.entry.CreatedAt
		}
	}
	held.entry.Status, held.entry.LastError = Pending, ""
	held.entry.PendingVersion, held.entry.PendingSHA256 = e.Version, e.SHA256
	held.entry.UpdatedAt = now
	r.mu.Lock()
	r.tools[e.Name] = &held
	r.mu.Unlock()
	r.opts.Log.Info("tool version waits for approval", "tool", e.Name, "version", e.Version)
	return &Event{Kind: Held, Entry: held.entry}
}

// Approve makes the pending version of name serve. It returns ErrNotPending
// if nothing waits, and ErrNotFound for an unknown tool.
func (r *Registry) Approve(ctx context.Context, name string) (Entry, error) {
	if err := contract.ValidName(name); err != nil {
		return Entry{}, err
	}
	if r.opts.ReadOnly {
		return Entry{}, ErrReadOnly
	}
	r.write.Lock()
	defer r.write.Unlock()
	var out Entry
	err := r.apply(func() ([]Event, error) {
		r.mu.RLock()
		rec, ok := r.tools[name]
		r.mu.RUnlock()
		if !ok {
			return nil, NotFound(name)
		}
		v := rec.entry.PendingVersion
		if v == 0 {
			return nil, fmt.Errorf("%s: %w", name, ErrNotPending)
		}
		src, err := os.ReadFile(r.versionPath(name, v))
		if err != nil || adaptbot.Digest(src) != rec.entry.PendingSHA256 {
			return nil, fmt.Errorf("registry: %s version %d is not in %s as it was checked; build or edit it again", name, v, r.opts.HistoryDir)
		}
		var e Entry
		meta, err := os.ReadFile(filepath.Join(filepath.Dir(r.versionPath(name, v)), "entry.json"))
		if err != nil || json.Unmarshal(meta, &e) != nil || e.Version != v {
			return nil, fmt.Errorf("registry: %s version %d has no readable entry.json in history; build or edit it again", name, v)
		}
		// History says it is approved now, so a registry restored from
		// history serves it (see fromHistory).
		if err := r.writeVersionEntry(e, false); err != nil {
			r.warn("registry: %s version %d approved, but its entry.json in %s still says pending: %v", name, v, r.opts.HistoryDir, err)
		}
		e.Status, e.LastError = OK, ""
		e.PendingVersion, e.PendingSHA256 = 0, ""
		e.UpdatedAt = r.opts.Now().UTC()
		if !rec.entry.CreatedAt.IsZero() {
			e.CreatedAt = rec.entry.CreatedAt
		}
		kind := Updated
		if rec.code == nil {
			kind = Added
		}
		r.mu.Lock()
		r.tools[name] = &record{entry: e, code: src}
		r.mu.Unlock()
		if err := r.saveLocked(); err != nil {
			return nil, err
		}
		out = e
		return []Event{{Kind: kind, Entry: e}}, nil
	})
	return out, err
}

// VersionSource returns the source of version v of name, from history.
func (r *Registry) VersionSource(name string, v int) ([]byte, error) {
	if err := contract.ValidName(name); err != nil {
		return nil, err
	}
	src, err := os.ReadFile(r.versionPath(name, v))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s has no version %d", ErrNotFound, name, v)
	}
	return src, err
}
