package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"adaptbot/contract"
)

// Cross-process writes.
//
// The server and the CLI each open their own Registry on the same files, so
// the in-process mutex (Registry.write) is not enough: without more, one
// process would save its in-memory list over an entry the other had just
// written. Every read-modify-write of the registry file (Open, Put, Delete,
// Rollback through Put, Sync, the watcher's reload, Refresh: everything that
// calls saveLocked or changes the map) therefore runs in withFile, which
// holds, in this order:
//
//  1. Registry.write, the in-process mutex (taken by the caller), for the
//     whole operation, the slow checks included;
//  2. the file lock, an exclusive flock on LockFile(Path), only around the
//     merge, the change and the save: file I/O and renames, never a compile
//     in the sandbox (Put checks before taking it, Sync and Open precheck)
//     except in a rare fallback that syncLocked describes;
//  3. Registry.mu, briefly, inside either, to swap map entries.
//
// Listeners run after the file lock is released (still under Registry.write,
// as before), so a slow listener never makes another process wait. The locks
// are always taken in this order and released on every path (defer), panics
// included, so there is no deadlock between two Registries of one process
// either: each waits for the file lock while holding only its own mutex.

// LockFile is the lock file beside the registry file at path.
func LockFile(path string) string { return path + ".lock" }

// ClaimsDir is the folder, inside the tools folder, of the lock files that
// Claim takes; it is a dot folder, so scans and the watcher skip it.
const ClaimsDir = ".locks"

// ErrBusy is returned by Claim for a name that another claim holds, in this
// process or another.
var ErrBusy = errors.New("the tool is claimed by another build")

// errLocked is tryLockFile's answer when the lock is taken.
var errLocked = errors.New("locked")

// withFile runs fn as one read-modify-write of the registry file: it takes
// the file lock, merges what other processes saved since this one last read
// or wrote the file, runs fn (which saves, if it changed anything), releases
// the file lock and then announces the merged changes and fn's events. The
// caller holds r.write.
//
// A lock file that cannot be created because the folder or file system is
// read-only is not an error for an operation that may have nothing to save
// (writes false: Open, Sync, a reload, Refresh): this process could not save
// the registry there either (a save creates a temporary file in the same
// folder), and reading needs no lock (saves are atomic renames), so it goes
// on unlocked, and saveLocked refuses to write, naming the lock file, if it
// has to after all. Put and Delete (writes true) fail at once with the lock
// file's error, before they write anything.
func (r *Registry) withFile(writes bool, fn func() ([]Event, error)) error {
	events, err := r.underFileLock(writes, fn)
	for _, ev := range events {
		r.emit(ev)
	}
	return err
}

func (r *Registry) underFileLock(writes bool, fn func() ([]Event, error)) ([]Event, error) {
	release, err := r.fileLock(writes)
	if err != nil {
		return nil, err
	}
	defer release()
	merged := r.refreshLocked()
	evs, err := fn()
	return append(merged, evs...), err
}

// fileLock takes the file lock, or enters read-only mode as withFile
// describes, and returns what ends either. The caller holds r.write.
func (r *Registry) fileLock(writes bool) (release func(), err error) {
	release, err = lockFile(LockFile(r.opts.Path))
	switch {
	case err == nil:
		return release, nil
	case writes || !isReadOnly(err):
		return nil, err
	}
	r.readOnly = err
	return func() { r.readOnly = nil }, nil
}

// refreshLocked merges into memory what other processes saved in the
// registry file since this process last read or wrote it (r.seen), and
// returns the changes as events. The caller holds r.write and the file lock,
// so the file cannot change underneath.
//
// Every writer merges before it changes anything and saves right after, so a
// file that differs from r.seen is newer than memory and its entries win,
// except where taking them would lose something: an entry the file no longer
// lists is dropped only if its source is gone too (a delete moves the
// folder), and an entry that names a version this process cannot load, or an
// older version than the one serving here, does not replace a serving one.
// Those cases come from hand edits or from a save that failed; the next save
// writes the kept entry back.
func (r *Registry) refreshLocked() []Event {
	data, err := os.ReadFile(r.opts.Path)
	if err != nil {
		// Missing (removed by hand: the next save writes it again) or
		// unreadable (the save will say so): there is nothing to merge.
		return nil
	}
	sum := hash(data)
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

// mergeEntry applies one entry of a file another process saved, and returns
// the change, if any.
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
		if code == nil {
			return &Event{Kind: Failed, Entry: e}
		}
		return &Event{Kind: Added, Entry: e}

	case e.Version == rec.entry.Version && e.SHA256 == rec.entry.SHA256:
		// The same version: only what changes without a new version can
		// differ (a failed check recorded, a fix, a hand edit of the text).
		old := rec.entry
		if old.Category == e.Category && old.Description == e.Description && old.Status == e.Status &&
			old.LastError == e.LastError && old.UpdatedAt.Equal(e.UpdatedAt) &&
			old.PendingVersion == e.PendingVersion && old.PendingSHA256 == e.PendingSHA256 {
			return nil
		}
		r.mu.Lock()
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

// Refresh merges what other processes saved in the registry file since this
// one last read or wrote it, and announces the changes; it saves nothing.
// Watch does this on its own a moment after the file changes; call Refresh
// before a decision that must see the latest state now, such as whether a
// tool exists before building it.
func (r *Registry) Refresh() error {
	r.write.Lock()
	defer r.write.Unlock()
	return r.withFile(false, func() ([]Event, error) { return nil, nil })
}

// codeFor returns the source that e serves: its version in history, or the
// tool's file if that holds the same source; nil if neither matches e.SHA256.
func (r *Registry) codeFor(e Entry) []byte {
	if e.Version > 0 {
		if src, err := os.ReadFile(r.versionPath(e.Name, e.Version)); err == nil && hash(src) == e.SHA256 {
			return src
		}
	}
	if src, err := os.ReadFile(r.SourcePath(e.Name)); err == nil && hash(src) == e.SHA256 {
		return src
	}
	return nil
}

// Claim reserves name for one long change, such as a build, across
// processes, without waiting: it fails at once with ErrBusy if another claim
// on name is held, by this process or another. release ends the claim; a
// process that dies releases its claims with it.
//
// A claim is a lock file in ClaimsDir, never removed (see lockFile). It does
// not lock the registry: Put and Delete take the file lock themselves, so a
// claim may be held for as long as a build talks to its model.
func (r *Registry) Claim(name string) (release func(), err error) {
	if err := contract.ValidName(name); err != nil {
		return nil, err
	}
	release, err = tryLockFile(filepath.Join(r.opts.ToolsDir, ClaimsDir, name+".lock"))
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("%w: %s", ErrBusy, name)
	}
	return release, err
}
