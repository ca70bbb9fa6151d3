package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"strings"
	"sync"

	"adaptbot/atomicfile"
)

// FileBackend keeps the records in one JSON file, mode 0600, that the
// server alone writes (the CLI asks the server). It reads the file once,
// at OpenFile, and writes it whole, atomically, on each change.
type FileBackend struct {
	path string
	mu   sync.Mutex
	recs map[string]json.RawMessage
}

var _ Backend = (*FileBackend)(nil)

// fileShape is the file's shape.
type fileShape struct {
	Records map[string]json.RawMessage `json:"records"`
}

// OpenFile opens the records at path; a missing file is an empty store,
// made at the first change. A file others may read is refused: its values
// are sealed, but who has what secret for which host is nobody else's
// business either.
func OpenFile(path string) (*FileBackend, error) {
	b := &FileBackend{path: path, recs: map[string]json.RawMessage{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("secrets: %s may be read by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	var f fileShape
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("secrets: %s is not a secrets file: %w", path, err)
	}
	if f.Records != nil {
		b.recs = f.Records
	}
	return b, nil
}

// Path is the file's path.
func (b *FileBackend) Path() string { return b.path }

// Get returns the record at key.
func (b *FileBackend) Get(_ context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.recs[key]
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

// List returns the records whose keys start with prefix.
func (b *FileBackend) List(_ context.Context, prefix string) (map[string][]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range b.recs {
		if strings.HasPrefix(k, prefix) {
			out[k] = append([]byte(nil), v...)
		}
	}
	return out, nil
}

// Put keeps value at key and writes the file.
func (b *FileBackend) Put(_ context.Context, key string, value []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := maps.Clone(b.recs)
	next[key] = append(json.RawMessage(nil), value...)
	return b.save(next)
}

// Delete removes key and writes the file.
func (b *FileBackend) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.recs[key]; !ok {
		return ErrNotFound
	}
	next := maps.Clone(b.recs)
	delete(next, key)
	return b.save(next)
}

// save writes recs and, once written, makes them the records: a failed
// write changes nothing.
func (b *FileBackend) save(recs map[string]json.RawMessage) error {
	raw, err := json.MarshalIndent(fileShape{Records: recs}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(b.path, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("secrets: write %s: %w", b.path, err)
	}
	b.recs = recs
	return nil
}

// MemoryBackend keeps the records in memory: for tests, and for a server
// that keeps no state.
type MemoryBackend struct {
	mu   sync.Mutex
	recs map[string][]byte
}

var _ Backend = (*MemoryBackend)(nil)

// Get returns the record at key.
func (m *MemoryBackend) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.recs[key]
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

// List returns the records whose keys start with prefix.
func (m *MemoryBackend) List(_ context.Context, prefix string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range m.recs {
		if strings.HasPrefix(k, prefix) {
			out[k] = append([]byte(nil), v...)
		}
	}
	return out, nil
}

// Put keeps value at key.
func (m *MemoryBackend) Put(_ context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string][]byte{}
	}
	m.recs[key] = append([]byte(nil), value...)
	return nil
}

// Delete removes key.
func (m *MemoryBackend) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recs[key]; !ok {
		return ErrNotFound
	}
	delete(m.recs, key)
	return nil
}
