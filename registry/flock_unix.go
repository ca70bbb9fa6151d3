//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// haveFlock says that lockFile and tryLockFile lock across processes here.
const haveFlock = true

// lockFile waits for an exclusive advisory lock (flock) on path, creating the
// file and its folder if needed, and returns the function that releases it.
//
// Each call opens the file afresh: flock belongs to the open file description,
// so two lockFile calls exclude each other even inside one process, and two
// Registry values on the same folder coordinate the way two processes do.
// Closing the descriptor releases the lock, so a crashed holder never leaves
// it taken; the file itself is never removed, since removing a lock file that
// another process is waiting on would let a third one lock a new file.
func lockFile(path string) (release func(), err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	if err := flock(f, syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("registry: lock %s: %w", path, err)
	}
	return func() { unlockFile(f) }, nil
}

// tryLockFile is lockFile without waiting: it fails with errLocked at once if
// another open of path holds the lock.
func tryLockFile(path string) (release func(), err error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("registry: lock %s: %w", path, err)
	}
	return func() { unlockFile(f) }, nil
}

// openLockFile opens path for locking. An existing lock file on a read-only
// file system can still be locked through a read-only descriptor, so that is
// tried before giving up.
func openLockFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("registry: lock file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		return f, nil
	}
	if isReadOnly(err) {
		if f, rerr := os.Open(path); rerr == nil {
			return f, nil
		}
	}
	return nil, fmt.Errorf("registry: lock file %s: %w", path, err)
}

// flock retries on EINTR: the Go runtime's own signals interrupt a waiting
// flock, and syscall.Flock does not retry by itself.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) {
	flock(f, syscall.LOCK_UN) // Close releases it too; this says so explicitly
	f.Close()
}

// isReadOnly reports whether err means this process may not write there: a
// read-only folder or file system, not a missing or broken path.
func isReadOnly(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}
