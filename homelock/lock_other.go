//go:build !unix

package homelock

import "os"

// TryLock cannot lock on this system: every process gets the file (and
// the folder), as before this package existed.
func TryLock(*os.File) (bool, error) { return false, nil }
