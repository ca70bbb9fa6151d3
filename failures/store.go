package failures

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/redact"
)

// Limits on what one case keeps, so that a tool's cases stay small whatever
// its callers send: MaxKeep cases of at most about 4 KiB each fit the
// 1 MiB of a NATS message with room to spare.
const (
	// MaxArgs is the most of a call's arguments a case keeps; longer
	// arguments are cut, and such a case cannot be replayed.
	MaxArgs = 2 << 10
	// MaxMessage caps a case's error message.
	MaxMessage = 512
	// MaxComment caps a person's words on a feedback case.
	MaxComment = 1 << 10
	// DefaultKeep is how many cases a tool keeps unless told otherwise.
	DefaultKeep = 50
	// MaxKeep is the most cases a tool may keep.
	MaxKeep = 200
	// MaxRepairs is how many repair records a tool keeps, newest last.
	MaxRepairs = 10
	// MaxAuthors is how many authors a case names, the latest kept: one
	// more sends the earliest's words to admins alone, nothing is lost.
	MaxAuthors = 16
)

// DefaultFlushEvery is how often a Store writes the tools that changed.
const DefaultFlushEvery = time.Second

// Status says where a case stands (adaptbot.CaseStatus).
type Status = adaptbot.CaseStatus

// The statuses of a case.
const (
	// Open: the tool failed this way; a repair may take it.
	Open = adaptbot.CaseOpen
	// Unconfirmed: a person's thumbs-down made it (Kind Feedback); it
	// counts for nothing until someone confirms it.
	Unconfirmed = adaptbot.CaseUnconfirmed
	// Accepted: a clear error that a repair was given and kept as the right
	// answer (a division by zero). It counts toward nothing again, and the
	// same refusal of the same arguments in a later version is accepted too.
	Accepted = adaptbot.CaseAccepted
)

// Case is one way a tool failed: the same tool, version and arguments, seen
// Count times (adaptbot.FailureCase). Its arguments are kept whole up to
// MaxArgs bytes, its authors up to MaxAuthors; who may read its words is
// the service's to decide.
type Case = adaptbot.FailureCase

// Repair records one repair of a tool, kept with its cases.
type Repair = adaptbot.Repair

// State is everything kept of one tool: its cases, most recently seen
// first, and its latest repairs, oldest first.
type State struct {
	Tool    string   `json:"tool"`
	Cases   []Case   `json:"cases"`
	Repairs []Repair `json:"repairs,omitempty"`
}

// Call is a failed call to record.
type Call struct {
	Tool    string
	Version int
	Args    json.RawMessage
	Kind    adaptbot.Failure
	Message string
	// Comment is a person's words (a feedback case).
	Comment   string
	RequestID string
	// Author is the pseudonym of whoever sent Args and made RequestID;
	// CommentBy of whoever wrote Comment (Author when empty). Empty is
	// nobody: the words are then for admins alone.
	Author    string
	CommentBy string
	// At is when it failed; zero is now.
	At time.Time
}

// Backend keeps the tools' states for a Store: files (Files), or a
// cluster's bucket. Both methods must be safe for concurrent use.
type Backend interface {
	// Load returns every tool's state kept.
	Load(ctx context.Context) (map[string]State, error)
	// Update applies change to the tool's state as kept, atomically
	// (against other writers, if any), and returns the state kept.
	Update(ctx context.Context, tool string, change func(State) State) (State, error)
}

// Options configures a Store.
type Options struct {
	// Keep bounds each tool's cases (DefaultKeep when 0, at most MaxKeep).
	Keep int
	// FlushEvery is how often changes are written (DefaultFlushEvery).
	FlushEvery time.Duration
	// Log receives what could not be written; nil discards.
	Log *slog.Logger
}

// Store keeps the failure cases of every tool. It is safe for concurrent
// use. Record changes memory only; Run writes the changes, at most once
// per tool per FlushEvery.
type Store struct {
	opts    Options
	backend Backend

	mu    sync.Mutex
	tools map[string]*tool
	// flushing serializes flushes, so a tool's state as kept is never
	// replaced by an older one.
	flushing sync.Mutex
}

// tool is one tool's state: base as the backend last kept it, and what
// happened here since (pending), not written yet: the next flush writes it.
type tool struct {
	base    State
	ids     map[string]bool // the IDs in base
	pending pending
	// inflight are the changes a flush is writing now, nil when none.
	// Until the backend has kept them they are neither in base nor in
	// pending, and reads must still see them (settled).
	inflight *pending
}

// settled is the tool's state as the backend keeps it, or is being told
// to keep it: base with the changes in flight.
func (t *tool) settled(keep int) State {
	if t.inflight == nil {
		return t.base
	}
	return apply(t.base, *t.inflight, keep)
}

// Load returns a Store over backend, with every tool's state it keeps. A
// Store with an error means some states could not be read: the backend
// set them aside, and the rest are loaded.
func Load(ctx context.Context, backend Backend, opts Options) (*Store, error) {
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	opts.Keep = min(opts.Keep, MaxKeep)
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Store{opts: opts, backend: backend, tools: map[string]*tool{}}
	states, err := backend.Load(ctx)
	if states == nil {
		return nil, err
	}
	for name, st := range states {
		s.replaceLocked(name, st)
	}
	// An error with states is what could not be read (a corrupt file set
	// aside): the store works with the rest, and the caller reports it.
	return s, err
}

// Keep is how many cases each tool keeps.
func (s *Store) Keep() int { return s.opts.Keep }

// Record counts one failed call: a new case, or one more of a case seen
// before (the same tool, version and arguments). It reports the case's ID
// and whether the case is new. It writes nothing: Run does.
func (s *Store) Record(c Call) (id string, fresh bool) {
	at := c.At
	if at.IsZero() {
		at = time.Now()
	}
	at = at.UTC()
	// Arguments of any kind but invalid ones passed the tool's schema, so
	// they are a JSON object already: compacting them needs no validation.
	args, size, exact := capArgs(c.Args, c.Kind != adaptbot.FailInvalidArgs)
	// A key pasted into a tool's arguments is not kept; arguments that held
	// one are no longer the call as made, so they cannot be run again.
	if red, changed := redact.JSON(args); changed {
		args, exact = red, false
	}
	id = caseID(c.Tool, c.Version, args)
	status := Open
	if c.Kind == adaptbot.FailFeedback {
		status = Unconfirmed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.toolLocked(c.Tool)
	if c.Kind == adaptbot.FailError && exact && t.accepted(args, s.opts.Keep) {
		// A refusal a repair kept, seen again (in a later version): it
		// is still the right answer.
		status = Accepted
	}
	d, ok := t.pending.deltas[id]
	if !ok {
		fresh = !t.ids[id] && (t.inflight == nil || t.inflight.deltas[id] == nil)
		if len(t.pending.deltas) >= s.opts.Keep {
			// The oldest pending case could not be among the Keep most
			// recent anyway: it goes first.
			delete(t.pending.deltas, oldest(t.pending.deltas))
		}
		d = &Case{ID: id, Tool: c.Tool, Version: c.Version, Args: args, ArgsBytes: size, Exact: exact, FirstSeen: at, Status: status}
		t.pending.deltas[id] = d
	}
	d.Count++
	later := Case{Kind: c.Kind, Message: clip.String(redact.String(c.Message), MaxMessage), Comment: clip.String(redact.String(c.Comment), MaxComment),
		LastSeen: at, RequestID: c.RequestID, RequestBy: c.Author, Status: status}
	if c.Author != "" {
		later.Authors = []string{c.Author}
	}
	if later.Comment != "" {
		later.CommentBy = cmp.Or(c.CommentBy, c.Author)
	}
	merge(d, later)
	return id, fresh
}

func (s *Store) toolLocked(name string) *tool {
	t := s.tools[name]
	if t == nil {
		t = &tool{base: State{Tool: name}, ids: map[string]bool{}}
		s.tools[name] = t
	}
	if t.pending.deltas == nil {
		t.pending.deltas = map[string]*Case{}
	}
	return t
}

// accepted reports whether a clear error with these arguments (compact, as
// cases keep them) was accepted in any version of the tool, kept or about
// to be.
func (t *tool) accepted(args []byte, keep int) bool {
	base := t.settled(keep)
	find := func(id string) *Case {
		if d := t.pending.deltas[id]; d != nil {
			return d
		}
		for i := range base.Cases {
			if base.Cases[i].ID == id {
				return &base.Cases[i]
			}
		}
		return nil
	}
	for _, c := range base.Cases {
		if c.Status == Accepted && bytes.Equal(c.Args, args) {
			return true
		}
	}
	for _, d := range t.pending.deltas {
		if d.Status == Accepted && bytes.Equal(d.Args, args) {
			return true
		}
	}
	for _, o := range t.pending.ops {
		if o.what != opAccept {
			continue
		}
		for _, id := range o.ids {
			if c := find(id); c != nil && c.Kind == adaptbot.FailError && bytes.Equal(c.Args, args) {
				return true
			}
		}
	}
	return false
}

// Get returns a tool's state as it stands here: what the backend keeps and
// what happened since.
func (s *Store) Get(name string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tools[name]
	if t == nil {
		return State{Tool: name}
	}
	return apply(t.settled(s.opts.Keep), t.pending, s.opts.Keep)
}

// Case returns one case of a tool.
func (s *Store) Case(name, id string) (Case, bool) {
	for _, c := range s.Get(name).Cases {
		if c.ID == id {
			return c, true
		}
	}
	return Case{}, false
}

// Tools returns every tool's state, by name.
func (s *Store) Tools() map[string]State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]State, len(s.tools))
	for name, t := range s.tools {
		out[name] = apply(t.settled(s.opts.Keep), t.pending, s.opts.Keep)
	}
	return out
}

// ErrNoCase is returned for a case ID a tool does not have.
var ErrNoCase = errors.New("no such failure case")

// Confirm makes unconfirmed cases (a person's thumbs-down) open: they count
// toward a repair and a repair may take them.
func (s *Store) Confirm(name string, ids ...string) error {
	return s.change(name, op{what: opConfirm, ids: ids})
}

// Dismiss removes cases: a thumbs-down that was not the tool's fault.
func (s *Store) Dismiss(name string, ids ...string) error {
	return s.change(name, op{what: opDismiss, ids: ids})
}

// Fixed marks cases as passed by version v, which a repair made.
func (s *Store) Fixed(name string, v int, ids ...string) error {
	return s.change(name, op{what: opFixed, ids: ids, version: v})
}

// Expect keeps with a case what a repair's version answered for it, where
// the case is not one of the tool's examples: later repairs must still
// give it (Case.Expect).
// An expectation that held a secret, or is longer than MaxMessage, is not
// kept: cut or redacted, it would no longer be what the version answers.
func (s *Store) Expect(name, id, expect string) error {
	if len(expect) > MaxMessage || redact.String(expect) != expect {
		expect = ""
	}
	return s.change(name, op{what: opExpect, ids: []string{id}, expect: expect})
}

// Accept marks the cases (clear errors) that the repair making version v
// kept as the right answer: they count toward nothing again.
func (s *Store) Accept(name string, v int, ids ...string) error {
	return s.change(name, op{what: opAccept, ids: ids, version: v})
}

func (s *Store) change(name string, o op) error {
	if len(o.ids) == 0 {
		return nil
	}
	have := map[string]bool{}
	for _, c := range s.Get(name).Cases {
		have[c.ID] = true
	}
	for _, id := range o.ids {
		if !have[id] {
			return ErrNoCase
		}
	}
	o.at = time.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.toolLocked(name)
	t.pending.ops = append(t.pending.ops, o)
	return nil
}

// AddRepair records a repair of a tool.
func (s *Store) AddRepair(name string, r Repair) {
	if r.At.IsZero() {
		r.At = time.Now()
	}
	r.At = r.At.UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.toolLocked(name)
	t.pending.repairs = append(t.pending.repairs, r)
}

// Replace sets a tool's state as the backend keeps it now, when another
// writer changed it (a cluster's watch): what happened here and is not
// written yet still applies on top.
func (s *Store) Replace(name string, st State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replaceLocked(name, st)
}

func (s *Store) replaceLocked(name string, st State) {
	t := s.toolLocked(name)
	st.Tool = name
	t.base = st
	t.ids = make(map[string]bool, len(st.Cases))
	for _, c := range st.Cases {
		t.ids[c.ID] = true
	}
}

// Run writes the tools that changed, at most once per FlushEvery each,
// until ctx ends; then it writes what is left, and returns.
func (s *Store) Run(ctx context.Context) {
	tick := time.NewTicker(s.opts.FlushEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := s.Flush(fctx); err != nil {
				s.opts.Log.Warn("failures: some failure cases were not written at shutdown", "err", err)
			}
			cancel()
			return
		case <-tick.C:
			if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.opts.Log.Warn("failures: failure cases not written yet; trying again", "err", err)
			}
		}
	}
}

// Flush writes every tool that changed now, one backend update each. What
// could not be written stays pending for the next flush.
func (s *Store) Flush(ctx context.Context) error {
	s.flushing.Lock()
	defer s.flushing.Unlock()
	s.mu.Lock()
	type job struct {
		name string
		p    pending
	}
	var jobs []job
	for name, t := range s.tools {
		if t.pending.empty() {
			continue
		}
		p := t.pending
		jobs = append(jobs, job{name, p})
		t.inflight = &p
		t.pending = pending{deltas: map[string]*Case{}}
	}
	s.mu.Unlock()
	slices.SortFunc(jobs, func(a, b job) int { return cmp.Compare(a.name, b.name) })
	var errs []error
	for _, j := range jobs {
		st, err := s.backend.Update(ctx, j.name, func(cur State) State {
			cur.Tool = j.name
			return apply(cur, j.p, s.opts.Keep)
		})
		s.mu.Lock()
		t := s.toolLocked(j.name)
		t.inflight = nil
		if err != nil {
			t.pending = unwrite(j.p, t.pending)
			errs = append(errs, err)
		} else {
			s.replaceLocked(j.name, st)
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}
