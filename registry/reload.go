package registry

import (
	"errors"
	"os"
	"sort"

	"adaptbot"
)

// refreshLocked merges into memory what changed in the registry file since
// this process last read or wrote it (r.seen), and returns the changes as
// events: a hand edit, or, for a ReadOnly registry, the owner's save. The
// caller holds r.write.
//
// A file that differs from r.seen is newer than memory and its entries win,
// except where taking them would lose something: an entry the file no longer
// lists is dropped only if its source is gone too (a delete moves the
// folder), and an entry that names a version this process cannot load, or an
// older version than the one serving here, does not replace a serving one.
// Those cases come from hand edits; the owner's next save writes the kept
// entry back.
func (r *Registry) refreshLocked() []Event {
	data, err := os.ReadFile(r.opts.Path)
	if err != nil {
		// Missing (removed by hand: the next save writes it again) or
		// unreadable (the save will say so): there is nothing to merge.
		return nil
	}
	sum := adaptbot.Digest(data)
	if sum == r.seen {
		return nil
	}
	r.seen = sum
	entries, err := parseFile(data)
	r.diskBad = err != nil
	if err != nil {
		r.warn("registry %s was changed and is now corrupt (%v); still serving the last good state, and it will be moved aside on the next save", r.opts.Path, err)
		return nil
	}
	var events []Event
	listed := make(map[string]bool, len(entries))
	for _, e := range entries {
		listed[e.Name] = true
		if ev := r.mergeEntry(e); ev != nil {
			events = append(events, *ev)
		}
	}
	r.mu.RLock()
	var unlisted []string
	for name := range r.tools {
		if !listed[name] {
			unlisted = append(unlisted, name)
		}
	}
	r.mu.RUnlock()
	sort.Strings(unlisted)
	for _, name := range unlisted {
		if _, err := os.Stat(r.SourcePath(name)); !errors.Is(err, os.ErrNotExist) {
			r.warn("registry %s no longer lists %s, but %s is still there; keeping it", r.opts.Path, name, r.SourcePath(name))
			continue
		}
		r.mu.Lock()
		rec := r.tools[name]
		delete(r.tools, name)
		r.mu.Unlock()
		events = append(events, Event{Kind: Removed, Entry: rec.entry})
	}
	return events
}

// mergeEntry applies one entry of the file as refreshLocked found it, and
// returns the change, if any.
func (r *Registry) mergeEntry(e Entry) *Event {
	r.mu.RLock()
	rec := r.tools[e.Name]
	r.mu.RUnlock()
	switch {
	case rec == nil:
		code := r.codeFor(e)
		r.mu.Lock()
		r.tools[e.Name] = &record{entry: e, code: code}
		r.mu.Unlock()
		switch {
		case code != nil:
			return &Event{Kind: Added, Entry: e}
		case e.Status == Pending:
			return &Event{Kind: Held, Entry: e}
		}
		return &Event{Kind: Failed, Entry: e}

	case e.Version == rec.entry.Version && e.SHA256 == rec.entry.SHA256:
		// The same version: only what changes without a new version can
		// differ (a failed check recorded, a fix, a hand edit of the text).
		old := rec.entry
		if old.Category == e.Category && old.Description == e.Description && old.Status == e.Status &&
			old.LastError == e.LastError && old.UpdatedAt.Equal(e.UpdatedAt) &&
			old.PendingVersion == e.PendingVersion && old.PendingSHA256 == e.PendingSHA256 && old.Warning == e.Warning {
			return nil
		}
		r.mu.Lock()
		rec.entry.Warning = e.Warning
		rec.entry.Category, rec.entry.Description = e.Category, e.Description
		rec.entry.Status, rec.entry.LastError, rec.entry.UpdatedAt = e.Status, e.LastError, e.UpdatedAt
		rec.entry.PendingVersion, rec.entry.PendingSHA256 = e.PendingVersion, e.PendingSHA256
		now := rec.entry
		r.mu.Unlock()
		if now.Status == Broken && old.Status != Broken {
			return &Event{Kind: Failed, Entry: now}
		}
		return &Event{Kind: Updated, Entry: now}

	case e.Version > rec.entry.Version:
		code := r.codeFor(e)
		if code == nil && rec.code != nil {
			r.warn("registry %s lists %s version %d, which is not in %s; version %d keeps serving", r.opts.Path, e.Name, e.Version, r.opts.HistoryDir, rec.entry.Version)
			return nil
		}
		kind := Updated
		if rec.code == nil {
			kind = Added
		}
		r.mu.Lock()
		r.tools[e.Name] = &record{entry: e, code: code}
		r.mu.Unlock()
		return &Event{Kind: kind, Entry: e}
	}
	r.warn("registry %s lists %s version %d (sha256 %.12s), not version %d that serves; keeping version %d", r.opts.Path, e.Name, e.Version, e.SHA256, rec.entry.Version, rec.entry.Version)
	return nil
}

// codeFor returns the source that e serves: its version in history, or the
// tool's file if that holds the same source; nil if neither matches e.SHA256.
func (r *Registry) codeFor(e Entry) []byte {
	if e.Version > 0 {
		if src, err := os.ReadFile(r.versionPath(e.Name, e.Version)); err == nil && adaptbot.Digest(src) == e.SHA256 {
			return src
		}
	}
	if src, err := os.ReadFile(r.SourcePath(e.Name)); err == nil && adaptbot.Digest(src) == e.SHA256 {
		return src
	}
	return nil
}
