//go:build unix

package web

import (
	"errors"
	"syscall"
)

// peerGone reports whether the peer of a connected socket has closed or
// reset it. It peeks without waiting, so it takes no bytes from the
// connection: a pipelined next request stays where fasthttp will read it.
func peerGone(raw syscall.RawConn) bool {
	var buf [1]byte
	var n int
	var err error
	if cerr := raw.Control(func(fd uintptr) {
		n, _, err = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); cerr != nil {
		return true // closed under us
	}
	switch {
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		return false // connected, nothing to read
	case err != nil:
		return true // reset
	}
	return n == 0 // 0 bytes: the peer sent FIN; more: a next request waits
}
