//go:build !unix

package users

import (
	"fmt"
	"os"
)

// lockFile opens path; without flock there is no lock here, and the
// one-writer rule rests on the commands asking the server first.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return f, nil
}

func unlockFile(f *os.File) error { return f.Close() }
