//go:build unix

package homelock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive flock on f without waiting, held until f is
// closed (or the process ends, however it ends). It reports held when
// another open file description holds it.
func TryLock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
