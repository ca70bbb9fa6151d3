package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/atomicfile"
	"adaptbot/contract"
	"adaptbot/redact"
)

// Compiler loads a tool in the sandbox without running it.
type Compiler interface {
	Compile(ctx context.Context, tool string, source []byte) error
}

// Options configures a Registry.
type Options struct {
	// ToolsDir holds the tools, one folder each.
	ToolsDir string
	// Path is the registry file.
	Path string
	// HistoryDir holds every accepted version; default ToolsDir/.history
	// (a dot folder, which the go tool ignores).
	HistoryDir string
	// HistoryKeep is how many versions of each tool history keeps; older
	// ones are pruned after each new version. Zero means DefaultHistoryKeep.
	HistoryKeep int
	// Compiler checks that a new version loads; nil skips the check.
	Compiler Compiler
	// Log receives warnings; nil discards them.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ReadOnly opens the registry for a process that serves tools but does
	// not own the files (`adaptbot mcp`, `adaptbot tools test`): it writes
	// nothing, not the registry file, not history, not a folder. It serves
	// what the owner's registry file says, each entry's serving version
	// loaded from history (or the tool's file, if it holds that version),
	// and follows the owner's saves; it never accepts a tool file on its own,
	// so a hand edit serves once the owner has accepted it (and, with
	// Review, approved it) and saved. A change in the tools folder only makes
	// it read the registry file again. The exception is a folder no owner has
	// saved a registry in yet (no file, no .bak): then it serves the tools in
	// the folder as the owner's first start would. Put, Delete and Approve
	// fail with ErrReadOnly.
	ReadOnly bool
	// Review holds every new version (a build, a hand edit, a tool dropped
	// in) as Pending until Approve; Put with PutOptions.Approved skips it.
	Review bool
	// Known reports whether a tool the registry does not hold exists: an
	// external MCP server's tool ("server__tool"), which a tool may call.
	// A new version that calls a tool neither the registry nor Known knows
	// is refused. nil knows none.
	Known func(name string) bool
}

// DefaultHistoryKeep is how many versions of each tool history keeps unless
// Options.HistoryKeep says otherwise.
const DefaultHistoryKeep = 20

// ExamplesFile is the name of a tool's examples, kept beside its source.
const ExamplesFile = "examples.json"

// NoteFile is the name of a version's note, kept beside it in history.
const NoteFile = "note.txt"

// Registry is the set of tools. It is safe for concurrent use.
type Registry struct {
	opts Options

	// write serializes every change (checks included), so changes are applied
	// one at a time in order; mu guards the maps for short reads and swaps.
	// One process owns the files (the server); others open them ReadOnly.
	write sync.Mutex
	mu    sync.RWMutex
	tools map[string]*record

	// Guarded by write. seen is the hash of the registry file as this process
	// last read or wrote it, so a hand edit (or, for a ReadOnly registry, the
	// owner's save) shows; diskBad says that content did not parse.
	seen    string
	diskBad bool

	warnings []string

	listenMu  sync.RWMutex
	listeners []func(Event)

	// calls caches the tools each version calls (usesOf), by name and
	// sha256.
	calls sync.Map
}

type record struct {
	entry Entry
	code  []byte // the serving source; nil while no version has passed
}

// serves reports whether the record's tool can be called: it has a
// version that passed, and a name no one reserved (a tool named general
// before the word was reserved keeps its entry, so it can be deleted, but
// never runs).
func (rec *record) serves() bool {
	return rec.code != nil && adaptbot.ReservedName(rec.entry.Name) == nil
}

// ErrNotFound is the one error for a tool that does not exist or does not
// serve, local or remote (toolbox re-exports it); NotFound wraps it so the
// message names the tool.
var ErrNotFound error = noSuchTool{}

// noSuchTool is ErrNotFound: a call of it failed with FailNotFound.
type noSuchTool struct{}

func (noSuchTool) Error() string { return "no such tool" }

// Failure is FailNotFound: a call of a tool that does not exist.
func (noSuchTool) Failure() adaptbot.Failure { return adaptbot.FailNotFound }

// NotFound returns the error for a missing tool, in the one wording every
// door uses: `no tool named "x"`.
func NotFound(name string) error { return notFound(name) }

// notFound is NotFound's error: errors.Is(err, ErrNotFound) holds, and the
// message is the one wording alone.
type notFound string

func (e notFound) Error() string        { return fmt.Sprintf("no tool named %q", string(e)) }
func (e notFound) Is(target error) bool { return target == ErrNotFound }

// Failure is FailNotFound: a call of a tool that does not exist.
func (e notFound) Failure() adaptbot.Failure { return adaptbot.FailNotFound }

// ErrReadOnly is returned by a change to a registry opened ReadOnly.
var ErrReadOnly = errors.New("registry: opened read-only; changes go through the server that owns it")

// Open loads the registry file, reconciles it with the tools folder and saves
// the result. A missing file is restored from the last good copy (.bak);
// a corrupt one is moved aside (its name is in Warnings) and the last good
// copy is used too. Either way the copy is then reconciled: a tool whose
// source matches a version in history gets that version's entry back
// (origin, created_at, version), and tools found only in the folder are
// added as manual. Without a good copy the registry is rebuilt the same way.
func Open(ctx context.Context, opts Options) (*Registry, error) {
	if opts.HistoryDir == "" {
		opts.HistoryDir = filepath.Join(opts.ToolsDir, ".history")
	}
	if opts.HistoryKeep <= 0 {
		opts.HistoryKeep = DefaultHistoryKeep
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(opts.ToolsDir, 0o755); err != nil {
			return nil, fmt.Errorf("registry: tools folder: %w", err)
		}
		// A kill -9 during a write leaves its temporary file behind.
		atomicfile.RemoveStale(filepath.Dir(opts.Path))
		atomicfile.RemoveStale(opts.ToolsDir)
	}
	r := &Registry{opts: opts, tools: map[string]*record{}}
	r.write.Lock()
	defer r.write.Unlock()
	// A first start: the tools already in the folder are the operator's, and
	// are accepted without review.
	firstStart := r.firstStart()
	entries, err := r.readFile()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		r.tools[e.Name] = &record{entry: e}
	}
	if opts.ReadOnly && !firstStart {
		// Follow the owner's file: each entry serves the version it names.
		for name, rec := range r.tools {
			if rec.code = r.codeFor(rec.entry); rec.code == nil && rec.entry.Version > 0 {
				r.warn("registry %s lists %s version %d, which is neither in %s nor %s; not served", opts.Path, name, rec.entry.Version, opts.HistoryDir, r.SourcePath(name))
			}
		}
		return r, nil
	}

	names, err := r.scan()
	if err != nil {
		return nil, err
	}
	err = r.apply(func() ([]Event, error) {
		for _, name := range names {
			r.syncLocked(ctx, name, adaptbot.OriginManual, firstStart)
		}
		for name, rec := range r.tools {
			if rec.code == nil && rec.entry.Status == OK {
				// Listed but gone from disk: removed by hand while we were down.
				r.warn("tool %s is in the registry but %s is missing; dropped (its versions stay in %s)", name, rec.entry.Source, r.opts.HistoryDir)
				delete(r.tools, name)
			}
		}
		return nil, r.saveLocked()
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// apply runs fn, one change made under r.write, and then announces the
// events it returns.
func (r *Registry) apply(fn func() ([]Event, error)) error {
	events, err := fn()
	for _, ev := range events {
		r.emit(ev)
	}
	return err
}

func (r *Registry) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.warnings = append(r.warnings, msg)
	r.mu.Unlock()
	r.opts.Log.Warn(msg)
}

// Warnings returns what went wrong while loading or watching, oldest first.
func (r *Registry) Warnings() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.warnings...)
}

// OnChange registers fn to be called after every saved change.
func (r *Registry) OnChange(fn func(Event)) {
	r.listenMu.Lock()
	r.listeners = append(r.listeners, fn)
	r.listenMu.Unlock()
}

func (r *Registry) emit(ev Event) {
	r.listenMu.RLock()
	ls := slices.Clone(r.listeners)
	r.listenMu.RUnlock()
	for _, fn := range ls {
		fn(ev)
	}
}

// SourcePath returns where the tool's source lives.
func (r *Registry) SourcePath(name string) string {
	return filepath.Join(r.opts.ToolsDir, name, name+".go")
}

// Dir returns the tool's folder.
func (r *Registry) Dir(name string) string { return filepath.Join(r.opts.ToolsDir, name) }

// List returns every entry, serving or broken, sorted by name, with what
// each uses and is used by (a tool that calls a tool that does not serve
// reads as Broken, with the reason).
func (r *Registry) List() []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := r.storedLocked()
	r.annotateLocked(out)
	return out
}

// storedLocked returns every entry as the registry file stores it, sorted
// by name. The caller holds r.mu.
func (r *Registry) storedLocked() []Entry {
	out := make([]Entry, 0, len(r.tools))
	for _, rec := range r.tools {
		e := rec.entry
		e.Uses, e.UsedBy = nil, nil // derived on reading, never stored
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Serving returns the tools that can be called, sorted by name.
func (r *Registry) Serving() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.tools))
	for _, rec := range r.tools {
		if rec.serves() {
			out = append(out, Tool{Entry: rec.entry, Code: rec.code})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Len returns how many tools can be called.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for _, rec := range r.tools {
		if rec.serves() {
			n++
		}
	}
	return n
}

// Entry returns the entry for name, serving or not, annotated as List's.
func (r *Registry) Entry(name string) (Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.tools[name]
	if !ok {
		return Entry{}, false
	}
	out := []Entry{rec.entry}
	r.annotateLocked(out)
	return out[0], true
}

// Tool returns the serving version of name.
func (r *Registry) Tool(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rec, ok := r.tools[name]
	if !ok || !rec.serves() {
		return Tool{}, false
	}
	return Tool{Entry: rec.entry, Code: rec.code}, true
}

// Sync re-reads the tool's file and applies what changed: a new version that
// passes its checks, a failure recorded on the entry, or a removal.
//
// A ReadOnly registry accepts nothing on its own: Sync reads the registry
// file again and follows what the owner saved (see Options.ReadOnly).
func (r *Registry) Sync(ctx context.Context, name string) error {
	if err := contract.ValidName(name); err != nil {
		return err
	}
	r.write.Lock()
	defer r.write.Unlock()
	if r.opts.ReadOnly && !r.firstStart() {
		return r.apply(func() ([]Event, error) { return r.followLocked(name), nil })
	}
	var err error
	serr := r.apply(func() ([]Event, error) {
		var ev *Event
		ev, err = r.syncLocked(ctx, name, adaptbot.OriginManual, r.opts.ReadOnly)
		if ev == nil {
			return nil, nil
		}
		if serr := r.saveLocked(); serr != nil {
			return nil, serr
		}
		return []Event{*ev}, nil
	})
	if serr != nil {
		return serr
	}
	return err
}

// followLocked is a ReadOnly registry's Sync: it merges the owner's last
// save of the registry file, and loads name's serving version if the file
// named it before it could be loaded. The caller holds r.write.
func (r *Registry) followLocked(name string) []Event {
	events := r.refreshLocked()
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec := r.tools[name]; rec != nil && rec.code == nil {
		if rec.code = r.codeFor(rec.entry); rec.code != nil {
			events = append(events, Event{Kind: Added, Entry: rec.entry})
		}
	}
	return events
}

// syncLocked does Sync's work without saving; it returns the event to emit.
// trust accepts a new version without review (a first start).
func (r *Registry) syncLocked(ctx context.Context, name string, origin adaptbot.Origin, trust bool) (*Event, error) {
	src, err := os.ReadFile(r.SourcePath(name))
	r.mu.RLock()
	rec := r.tools[name]
	r.mu.RUnlock()
	if errors.Is(err, os.ErrNotExist) {
		if rec == nil {
			return nil, nil
		}
		r.mu.Lock()
		delete(r.tools, name)
		r.mu.Unlock()
		return &Event{Kind: Removed, Entry: rec.entry}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	if msg := r.reservedProblem(name); msg != "" {
		return r.reservedLocked(name, rec, msg), nil
	}
	sum := adaptbot.Digest(src)
	if rec != nil && rec.entry.PendingSHA256 == sum {
		// The version waiting for approval: nothing to do but make sure the
		// previous one serves.
		if rec.code == nil {
			r.mu.Lock()
			r.restoreLocked(rec)
			r.mu.Unlock()
		}
		return nil, nil
	}
	if rec != nil && rec.entry.SHA256 == sum && (rec.code != nil || rec.entry.Status == OK) {
		changed := rec.entry.Status != OK || rec.entry.PendingVersion != 0
		// An entry saved before the registry recorded what it now derives
		// from a source (the output schema, say) gets it from the source.
		spec, perr := contract.Parse(name, src)
		r.mu.Lock()
		if perr == nil && describe(&rec.entry, spec) {
			changed = true
		}
		rec.code = src
		rec.entry.Status, rec.entry.LastError = OK, ""
		// The file is back to the serving version: a pending one is dropped.
		rec.entry.PendingVersion, rec.entry.PendingSHA256 = 0, ""
		r.mu.Unlock()
		r.snapshot(rec.entry, src, false)
		if changed {
			return &Event{Kind: Updated, Entry: rec.entry}, nil
		}
		return nil, nil
	}
	return r.acceptLocked(ctx, name, src, origin, "", trust)
}

// acceptLocked checks src and, if it passes, makes it the serving version
// (or, with Options.Review and approved false, holds it); if not, it records
// the failure on the entry.
func (r *Registry) acceptLocked(ctx context.Context, name string, src []byte, origin adaptbot.Origin, category string, approved bool) (*Event, error) {
	spec, err := r.check(ctx, name, src, true)
	if err == nil {
		return r.applyLocked(name, src, spec, origin, category, approved, false, "")
	}
	r.mu.RLock()
	rec := r.tools[name]
	r.mu.RUnlock()
	now := r.opts.Now().UTC()
	r.mu.Lock()
	if rec == nil {
		rec = &record{entry: Entry{Tool: adaptbot.Tool{Name: name, Origin: origin}, Source: r.relSource(name), CreatedAt: now}}
		r.tools[name] = rec
	}
	if rec.code == nil {
		r.restoreLocked(rec)
	}
	rec.entry.Status = Broken
	rec.entry.LastError = err.Error()
	rec.entry.UpdatedAt = now
	e := rec.entry
	r.mu.Unlock()
	r.opts.Log.Warn("tool rejected", "tool", name, "err", err)
	return &Event{Kind: Failed, Entry: e}, err
}

// applyLocked makes src, which passed its checks as spec, the serving
// version: the next version number, a snapshot in history, the entry.
//
// With Options.Review on and approved false, or with hold, the version is
// kept in history but only held (see holdLocked). A note, if any, is kept
// with the version before it serves or is held, so no reader sees the
// version without it.
func (r *Registry) applyLocked(name string, src []byte, spec *contract.Spec, origin adaptbot.Origin, category string, approved, hold bool, note string) (*Event, error) {
	r.mu.RLock()
	rec := r.tools[name]
	r.mu.RUnlock()
	now := r.opts.Now().UTC()
	kind := Updated
	e := Entry{Tool: adaptbot.Tool{Name: name}, CreatedAt: now}
	if rec != nil {
		e = rec.entry
	}
	// Numbers continue from history, so a tool deleted and brought back never
	// reuses a version number.
	e.Version = max(e.Version, r.latestVersion(name)) + 1
	if rec == nil || rec.code == nil {
		kind = Added
	}
	// The source's own Category wins: it is what a hand edit or a restart
	// would read again.
	if spec.Category != "" {
		category = spec.Category
	}
	if category == "" && rec != nil {
		category = rec.entry.Category
	}
	describe(&e, spec)
	e.Category = category
	e.Source = r.relSource(name)
	e.SHA256 = adaptbot.Digest(src)
	e.Origin = origin
	e.Status, e.LastError = OK, ""
	e.Warning = "" // about the version before; the checks of this one say anew
	e.UpdatedAt = now
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	held := (r.opts.Review && !approved) || hold
	if err := r.snapshot(e, src, held); err != nil {
		return nil, err
	}
	if note != "" && !r.opts.ReadOnly {
		if err := atomicfile.Write(filepath.Join(filepath.Dir(r.versionPath(name, e.Version)), NoteFile), []byte(redact.String(note)), 0o600); err != nil {
			r.warn("registry: %s: the note of version %d was not kept: %v", name, e.Version, err)
		}
	}
	if held {
		return r.holdLocked(rec, e), nil
	}
	r.mu.Lock()
	r.tools[name] = &record{entry: e, code: src}
	r.mu.Unlock()
	return &Event{Kind: kind, Entry: e}, nil
}

// check runs a new version's checks: a name no tool may have
// (adaptbot.ReservedName), the contract (its calls of other tools
// included), with callees that the tools it calls exist and close no cycle,
// and a compile.
func (r *Registry) check(ctx context.Context, name string, src []byte, callees bool) (*contract.Spec, error) {
	if err := adaptbot.ReservedName(name); err != nil {
		return nil, err
	}
	spec, err := contract.Parse(name, src)
	if err != nil {
		return nil, err
	}
	if callees {
		if err := r.checkCallees(spec, src); err != nil {
			return nil, err
		}
	}
	if r.opts.Compiler != nil {
		if err := r.opts.Compiler.Compile(ctx, name, src); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// relSource is the tool's source path as the registry file records it:
// relative to the file's folder, so the file reads the same wherever the
// folder is (ADAPTBOT_HOME, a checkout, a test's temporary folder).
func (r *Registry) relSource(name string) string {
	if rel, err := filepath.Rel(filepath.Dir(r.opts.Path), r.SourcePath(name)); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(r.SourcePath(name))
}

// saveLocked writes the registry file, keeping the previous good copy as .bak,
// if its content changed; a ReadOnly registry writes nothing. The caller
// holds r.write.
func (r *Registry) saveLocked() error {
	if r.opts.ReadOnly {
		return nil
	}
	r.mu.RLock()
	entries := r.storedLocked()
	r.mu.RUnlock()
	data, err := json.MarshalIndent(file{Tools: entries}, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	old, rerr := os.ReadFile(r.opts.Path)
	if rerr == nil && bytes.Equal(old, data) {
		r.seen, r.diskBad = adaptbot.Digest(data), false
		return nil
	}
	if rerr == nil {
		if _, perr := parseFile(old); perr != nil {
			aside := r.opts.Path + ".corrupt-" + r.opts.Now().UTC().Format("20060102T150405.000")
			if err := os.Rename(r.opts.Path, aside); err != nil {
				return fmt.Errorf("registry %s is corrupt (%v) and could not be moved aside: %w", r.opts.Path, perr, err)
			}
			r.warn("registry %s was corrupt (%v); moved it to %s before saving", r.opts.Path, perr, aside)
		} else if err := atomicfile.Write(r.opts.Path+".bak", old, 0o644); err != nil {
			return fmt.Errorf("registry: keep last good copy: %w", err)
		}
	}
	if err := atomicfile.Write(r.opts.Path, data, 0o644); err != nil {
		return fmt.Errorf("registry: save: %w", err)
	}
	r.seen, r.diskBad = adaptbot.Digest(data), false
	return nil
}
