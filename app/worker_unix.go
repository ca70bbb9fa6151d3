//go:build unix

package main

import "syscall"

// startedAsWorker reports whether this process has the pipes the server
// gives a sandbox worker (file descriptors 3 and 4), as opposed to being
// started by hand.
func startedAsWorker() bool {
	for _, fd := range []int{3, 4} {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return false
		}
	}
	return true
}
