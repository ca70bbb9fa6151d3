package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"adaptbot"
	"adaptbot/atomicfile"
	"adaptbot/contract"
)

// PutOptions describes a new version written through the registry.
type PutOptions struct {
	Origin adaptbot.Origin
	// Category is used when the source declares none.
	Category string
	// Examples, if set, is written to the tool's examples file.
	Examples []byte
	// Approved serves the version at once even with Options.Review on: a
	// change a person made on purpose, such as a rollback.
	Approved bool
	// Replicated says the version was checked where it was made (another
	// replica of a cluster): the tools it calls need not be here yet, as
	// they may arrive after it.
	Replicated bool
	// Hold keeps the version waiting for approval even with Options.Review
	// off: a change the server proposes on its own (an automatic repair in
	// ADAPTBOT_AUTO_REPAIR=propose mode).
	Hold bool
	// Note, when set, is kept with the version in history (Version.Note):
	// what the version changed, such as the failure cases a repair fixed.
	Note string
	// If, when set, is asked under the registry's write lock, after every
	// change before this one has been announced and before anything is
	// written: an error stops the Put, writes nothing and is returned. A
	// cluster's mirror uses it to drop a change that a newer one has
	// overtaken.
	If func() error
}

// Put checks src and, if it passes, writes it as the tool's next version and
// serves it. On failure nothing is written and the serving version, if any,
// is untouched.
func (r *Registry) Put(ctx context.Context, name string, src []byte, o PutOptions) (Entry, error) {
	if err := contract.ValidName(name); err != nil {
		return Entry{}, err
	}
	if r.opts.ReadOnly {
		return Entry{}, ErrReadOnly
	}
	if o.Origin == "" {
		o.Origin = adaptbot.OriginManual
	}
	r.write.Lock()
	defer r.write.Unlock()
	if o.If != nil {
		if err := o.If(); err != nil {
			return Entry{}, err
		}
	}
	spec, err := r.check(ctx, name, src, !o.Replicated)
	if err != nil {
		return Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return Entry{}, err // cancelled while checking: nothing written
	}
	var e Entry
	err = r.apply(func() ([]Event, error) {
		dir := r.Dir(name)
		if o.Examples != nil {
			if err := atomicfile.Write(filepath.Join(dir, ExamplesFile), o.Examples, 0o644); err != nil {
				return nil, fmt.Errorf("registry: write examples: %w", err)
			}
		}
		if err := atomicfile.Write(r.SourcePath(name), src, 0o644); err != nil {
			return nil, fmt.Errorf("registry: write source: %w", err)
		}
		ev, err := r.applyLocked(name, src, spec, o.Origin, o.Category, o.Approved && !o.Hold, o.Hold, o.Note)
		if err != nil {
			return nil, err
		}
		if err := r.saveLocked(); err != nil {
			return nil, err
		}
		e = ev.Entry
		return []Event{*ev}, nil
	})
	return e, err
}

// Delete removes the tool from serving and from the registry, whether
// other tools use it or not (Remove asks first). Its folder is moved into
// history, so nothing is lost and Rollback can bring it back.
func (r *Registry) Delete(ctx context.Context, name string) (Entry, error) {
	return r.DeleteIf(ctx, name, nil)
}

// DeleteIf is Delete, asking cond first as PutOptions.If does (nil: no
// condition).
func (r *Registry) DeleteIf(ctx context.Context, name string, cond func() error) (Entry, error) {
	if err := contract.ValidName(name); err != nil {
		return Entry{}, err
	}
	if r.opts.ReadOnly {
		return Entry{}, ErrReadOnly
	}
	r.write.Lock()
	defer r.write.Unlock()
	if cond != nil {
		if err := cond(); err != nil {
			return Entry{}, err
		}
	}
	return r.deleteLocked(name)
}

// deleteLocked is Delete's work; the caller holds r.write.
func (r *Registry) deleteLocked(name string) (Entry, error) {
	var e Entry
	err := r.apply(func() ([]Event, error) {
		r.mu.RLock()
		rec, ok := r.tools[name]
		r.mu.RUnlock()
		if !ok {
			return nil, NotFound(name)
		}
		if rec.code != nil {
			if err := r.snapshot(rec.entry, rec.code, false); err != nil {
				return nil, err
			}
		}
		if _, err := os.Stat(r.Dir(name)); err == nil {
			aside := filepath.Join(r.opts.HistoryDir, name, "deleted-"+r.opts.Now().UTC().Format("20060102T150405.000000000"))
			if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
				return nil, fmt.Errorf("registry: delete: %w", err)
			}
			if err := os.Rename(r.Dir(name), aside); err != nil {
				return nil, fmt.Errorf("registry: delete: %w", err)
			}
		}
		r.mu.Lock()
		delete(r.tools, name)
		r.mu.Unlock()
		if err := r.saveLocked(); err != nil {
			return nil, err
		}
		e = rec.entry
		return []Event{{Kind: Removed, Entry: rec.entry}}, nil
	})
	return e, err
}

// Rollback makes version v serve again, as a new version (history only grows).
func (r *Registry) Rollback(ctx context.Context, name string, v int) (Entry, error) {
	return r.rollback(ctx, name, v, true)
}

// RollbackPending is Rollback for a version that must not serve before a
// person approves it (a check of it failed): with Options.Review on it
// waits as pending; with review off it serves, as with Rollback.
func (r *Registry) RollbackPending(ctx context.Context, name string, v int) (Entry, error) {
	return r.rollback(ctx, name, v, !r.opts.Review)
}

func (r *Registry) rollback(ctx context.Context, name string, v int, approved bool) (Entry, error) {
	if err := contract.ValidName(name); err != nil {
		return Entry{}, err
	}
	src, err := os.ReadFile(r.versionPath(name, v))
	if errors.Is(err, os.ErrNotExist) {
		return Entry{}, missingVersion{name, v}
	}
	if err != nil {
		return Entry{}, err
	}
	// A rollback is a person's choice of a version they have seen: it
	// needs no further approval, unless a check of it failed.
	o := PutOptions{Origin: adaptbot.OriginManual, Approved: approved}
	var kept Entry
	if meta, err := os.ReadFile(filepath.Join(filepath.Dir(r.versionPath(name, v)), "entry.json")); err == nil && json.Unmarshal(meta, &kept) == nil {
		o.Origin, o.Category = kept.Origin, kept.Category
	}
	if e, ok := r.Entry(name); ok {
		o.Origin, o.Category = e.Origin, e.Category
	}
	if ex, err := os.ReadFile(filepath.Join(filepath.Dir(r.versionPath(name, v)), ExamplesFile)); err == nil {
		o.Examples = ex
	}
	return r.Put(ctx, name, src, o)
}

// Examples returns the tool's stored examples file, or nil.
func (r *Registry) Examples(name string) []byte {
	if contract.ValidName(name) != nil {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(r.Dir(name), ExamplesFile))
	return b
}

// missingVersion is a version that history does not have. It is ErrNotFound
// to errors.Is, so the HTTP edge answers 404 for it as for a missing tool.
type missingVersion struct {
	name string
	v    int
}

func (e missingVersion) Error() string        { return fmt.Sprintf("%s has no version %d", e.name, e.v) }
func (e missingVersion) Is(target error) bool { return target == ErrNotFound }
