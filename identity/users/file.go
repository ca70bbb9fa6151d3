package users

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"adaptbot/atomicfile"
	"adaptbot/homelock"
)

// SecretFile is the name of the server's secret, in the users file's
// folder.
const SecretFile = "adaptbot.secret"

// ErrLocked: another process holds the users file (the server, most
// likely).
var ErrLocked = errors.New("the users file is in use")

// FileBackend keeps the users in one JSON file the server owns (0600),
// written whole and atomically (a temporary file renamed over it), and the
// secret in SecretFile beside it (0600, made on first use). It holds an
// exclusive lock on the file for as long as it is open, so there is one
// writer: the server, or, while no server runs, a command that changes
// users.
type FileBackend struct {
	path string
	lock *os.File

	mu    sync.Mutex
	users map[string]User
}

// fileFormat is the users file.
type fileFormat struct {
	Version int    `json:"version"`
	Users   []User `json:"users"`
}

// OpenFile opens the users file at path (which need not exist yet) and
// takes its lock; ErrLocked when another process has it.
func OpenFile(path string) (*FileBackend, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	b := &FileBackend{path: path, lock: lock, users: map[string]User{}}
	list, err := readFile(path)
	if err != nil {
		b.Close()
		return nil, err
	}
	for _, u := range list {
		b.users[u.Name] = u
	}
	return b, nil
}

// ReadFile returns the users in the file at path without taking its lock
// (it only reads): for seeding a cluster, and for tests.
func ReadFile(path string) ([]User, error) { return readFile(path) }

func readFile(path string) ([]User, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	var f fileFormat
	if err := json.Unmarshal(raw, &f); err != nil {
		// Never overwritten: the server refuses to start rather than lose
		// the users.
		return nil, fmt.Errorf("users: %s is not a users file (%v); fix or move it, nothing was changed", path, err)
	}
	return f.Users, nil
}

// Path is the users file.
func (b *FileBackend) Path() string { return b.path }

// lockFile opens path and takes its lock without waiting; the lock goes
// with the process, so a crash never leaves it held. Where there is no
// flock there is no lock, and the one-writer rule rests on the commands
// asking the server first.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	held, err := homelock.TryLock(f)
	switch {
	case held:
		f.Close()
		return nil, fmt.Errorf("%w: another process (the server?) holds %s", ErrLocked, path)
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("users: lock %s: %w", path, err)
	}
	return f, nil
}

// Close releases the lock.
func (b *FileBackend) Close() error {
	if b.lock == nil {
		return nil
	}
	err := b.lock.Close() // closing the only descriptor drops the lock
	b.lock = nil
	return err
}

// Secret reads the secret beside the users file, making it the first time.
func (b *FileBackend) Secret(context.Context) ([]byte, error) {
	return ReadSecret(filepath.Join(filepath.Dir(b.path), SecretFile), true)
}

// ReadSecret reads a secret file; with create it makes one (32 random
// bytes, hex, 0600) if there is none. A secret file others may read is
// refused, as ssh refuses such a key.
func ReadSecret(path string, create bool) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && create {
		secret := make([]byte, 32)
		rand.Read(secret)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return ReadSecret(path, false) // made meanwhile by another process
		}
		if err != nil {
			return nil, fmt.Errorf("users: make the server secret: %w", err)
		}
		_, werr := f.WriteString(hex.EncodeToString(secret) + "\n")
		if serr := f.Sync(); werr == nil {
			werr = serr
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return nil, fmt.Errorf("users: write the server secret: %w", werr)
		}
		return secret, nil
	}
	if err != nil {
		return nil, fmt.Errorf("users: the server secret: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("users: the server secret %s may be read by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(secret) < 32 {
		return nil, fmt.Errorf("users: %s is not a server secret (64 hex digits or more); move it aside to make a new one, which signs everyone out and changes every pseudonym", path)
	}
	return secret, nil
}

// Load returns the users read at OpenFile, as changed since.
func (b *FileBackend) Load(context.Context) ([]User, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]User, 0, len(b.users))
	for _, u := range b.users {
		out = append(out, u)
	}
	return out, nil
}

// Create adds u and writes the file.
func (b *FileBackend) Create(_ context.Context, u User) error {
	return b.edit(func(m map[string]User) error {
		if _, ok := m[u.Name]; ok {
			return ErrExists
		}
		m[u.Name] = u
		return nil
	})
}

// Update replaces u and writes the file.
func (b *FileBackend) Update(_ context.Context, u User) error {
	return b.edit(func(m map[string]User) error {
		if _, ok := m[u.Name]; !ok {
			return ErrNotFound
		}
		m[u.Name] = u
		return nil
	})
}

// Delete removes the named user and writes the file.
func (b *FileBackend) Delete(_ context.Context, name string) error {
	return b.edit(func(m map[string]User) error {
		if _, ok := m[name]; !ok {
			return ErrNotFound
		}
		delete(m, name)
		return nil
	})
}

// edit applies fn to a copy of the users and writes it; the users in
// memory change only once the file has.
func (b *FileBackend) edit(fn func(map[string]User) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lock == nil {
		return errors.New("users: the users file is closed")
	}
	next := make(map[string]User, len(b.users)+1)
	for k, v := range b.users {
		next[k] = v
	}
	if err := fn(next); err != nil {
		return err
	}
	f := fileFormat{Version: 1, Users: make([]User, 0, len(next))}
	for _, u := range next {
		f.Users = append(f.Users, u)
	}
	sortUsers(f.Users)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(b.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("users: write %s: %w", b.path, err)
	}
	b.users = next
	return nil
}

var _ Backend = (*FileBackend)(nil)
