//go:build !linux

package cli

// noEcho cannot stop the terminal from showing what is typed here:
// restore does nothing.
func noEcho(fd uintptr) (restore func()) { return func() {} }
