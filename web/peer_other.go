//go:build !unix

package web

import "syscall"

// peerGone cannot tell here; work for a client that left ends at its deadline.
func peerGone(syscall.RawConn) bool { return false }
