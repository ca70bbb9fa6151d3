//go:build !linux

package cli

import "os"

// isTTY reports whether fd is a terminal. Without the Linux ioctl, a
// character device that is not the null device counts as one.
func isTTY(fd uintptr) bool {
	fi, err := os.NewFile(fd, "").Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
