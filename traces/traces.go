// Package traces keeps what happened in each recent request (a chat's result
// with its trace, a direct run, a build) so that it can be looked up by
// request ID after the answer is gone: GET /api/requests/<id>.
//
// Records are appended as JSON lines to one file (by default
// benchmarks/requests.jsonl, beside the CSV). When the file would grow past
// MaxBytes it is renamed to <file>.1, replacing the older one, and a new file
// starts: at most about twice MaxBytes are kept on disk. The newest Keep
// records are also indexed in memory; older ones are found by reading the two
// files, newest first. Opening the store reads the files back, so traces
// survive a restart.
package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/redact"
)

// Kinds of request.
const (
	Chat  = "chat"
	Run   = "run"
	Build = "build"
	// Change is a delete, rollback, approval or test of a tool.
	Change = "change"
	// Feedback is a person's thumbs up or down on an answer.
	Feedback = "feedback"
	// Approval is a person's decision on a tool's request that waited for
	// them, or its expiry.
	Approval = "approval"
)

// Record is one request (adaptbot.Trace).
type Record = adaptbot.Trace

// Rating is a person's thumbs up (1) or down (-1) on an answer, with an
// optional comment.
type Rating = adaptbot.Rating

// Options sizes a Store; zero values take the defaults.
type Options struct {
	// MaxBytes is the size at which the file is rotated (default 8 MiB).
	MaxBytes int64
	// Keep is how many of the newest records are indexed in memory
	// (default 1000).
	Keep int
}

// The bounds a Store takes unless told otherwise.
const (
	DefaultMaxBytes = 8 << 20
	DefaultKeep     = 1000
)

// WithDefaults fills the zero values of o with the defaults: the bounds of
// a store here, and of one elsewhere that keeps as much (a cluster's
// stream keeps about twice MaxBytes, as the file and the one before it do).
func (o Options) WithDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Keep <= 0 {
		o.Keep = DefaultKeep
	}
	return o
}

// Store is the bounded store of recent requests. It is safe for concurrent
// use.
type Store struct {
	path string
	opts Options

	mu    sync.Mutex
	f     *os.File
	size  int64
	index map[string]Record
	order []string // IDs in the index, oldest first (a ring via head)
	head  int
}

// ErrNotFound is returned by Get for an ID the store does not hold.
var ErrNotFound = errors.New("no stored request with that ID")

// Open opens (or creates) the store at path and indexes its newest records.
func Open(path string, opts Options) (*Store, error) {
	opts = opts.WithDefaults()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	s := &Store{path: path, opts: opts, index: make(map[string]Record, opts.Keep)}
	for _, p := range []string{path + ".1", path} {
		if err := eachRecord(p, func(r Record) bool { s.remember(r); return true }); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("traces: %w", err)
		}
	}
	// Traces hold people's words: the owner alone reads them, and a file
	// an older release left readable to all is tightened.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("traces: %w", err)
	}
	for _, old := range []string{path + ".1"} {
		if err := os.Chmod(old, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, fmt.Errorf("traces: %w", err)
		}
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("traces: %w", err)
	}
	s.f, s.size = f, info.Size()
	return s, nil
}

// Path returns the file the store appends to.
func (s *Store) Path() string { return s.path }

// Add stores r, with one write of one line. A record without an ID is
// refused; one without a time gets the current time.
func (s *Store) Add(r Record) error {
	line, err := Encode(&r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return errors.New("traces: the store is closed")
	}
	if s.size > 0 && s.size+int64(len(line)) > s.opts.MaxBytes {
		if err := s.rotate(); err != nil {
			return err
		}
	}
	n, err := s.f.Write(line)
	s.size += int64(n)
	if err != nil {
		return fmt.Errorf("traces: %w", err)
	}
	s.remember(r)
	return nil
}

// Encode checks r as every store does before keeping it, gives it the
// current time if it has none, and returns its JSON: a record without an
// ID, or whose result is not JSON, is refused.
func Encode(r *Record) ([]byte, error) {
	if r.ID == "" {
		return nil, errors.New("traces: a record needs a request ID")
	}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if len(r.Result) > 0 && !json.Valid(r.Result) {
		return nil, fmt.Errorf("traces: the result of %s is not valid JSON", r.ID)
	}
	// What a person wrote, and what tools and models answered, may hold a
	// pasted key: it is stored redacted, in any store.
	r.Query, r.Error = redact.String(r.Query), redact.String(r.Error)
	r.Result, _ = redact.JSON(r.Result)
	if r.Rating != nil && r.Rating.Comment != "" {
		rating := *r.Rating
		rating.Comment = redact.String(rating.Comment)
		r.Rating = &rating
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	return b, nil
}

// rotate moves the file to path.1, replacing the older one, and starts a new
// file. The caller holds s.mu.
func (s *Store) rotate() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("traces: rotate: %w", err)
	}
	s.f = nil
	if err := os.Rename(s.path, s.path+".1"); err != nil {
		return fmt.Errorf("traces: rotate: %w", err)
	}
	f, err := os.OpenFile(s.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("traces: rotate: %w", err)
	}
	s.f, s.size = f, 0
	return nil
}

// remember indexes r, forgetting the oldest indexed record past Keep. The
// caller holds s.mu (or owns s).
func (s *Store) remember(r Record) {
	if _, ok := s.index[r.ID]; ok {
		s.index[r.ID] = r // the same ID stored again: the newest wins
		return
	}
	if len(s.order) < s.opts.Keep {
		s.order = append(s.order, r.ID)
	} else {
		delete(s.index, s.order[s.head])
		s.order[s.head] = r.ID
		s.head = (s.head + 1) % len(s.order)
	}
	s.index[r.ID] = r
}

// Get returns the record of request id: from memory if it is recent, else
// from the files, newest first.
func (s *Store) Get(id string) (Record, error) {
	s.mu.Lock()
	r, ok := s.index[id]
	s.mu.Unlock()
	if ok {
		return r, nil
	}
	if id == "" {
		return Record{}, ErrNotFound
	}
	for _, p := range []string{s.path, s.path + ".1"} {
		var found *Record
		err := eachRecord(p, func(r Record) bool {
			if r.ID == id {
				found = &r // keep reading: a later line for the same ID wins
			}
			return true
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return Record{}, fmt.Errorf("traces: %w", err)
		}
		if found != nil {
			return *found, nil
		}
	}
	return Record{}, ErrNotFound
}

// Recent returns up to n of the newest indexed records, newest first.
func (s *Store) Recent(n int) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, min(n, len(s.order)))
	for i := 0; i < len(s.order) && len(out) < n; i++ {
		j := (s.head - 1 - i + 2*len(s.order)) % len(s.order)
		out = append(out, s.index[s.order[j]])
	}
	return out
}

// Close closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// eachRecord calls fn with each well-formed record of the file at p, in
// order, until fn returns false. A line that does not parse (a write cut by
// a crash) is skipped.
func eachRecord(p string, fn func(Record) bool) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Record
		if json.Unmarshal(line, &r) != nil || r.ID == "" {
			continue
		}
		if !fn(r) {
			return nil
		}
	}
	return sc.Err()
}
