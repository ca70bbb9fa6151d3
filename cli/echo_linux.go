package cli

import (
	"syscall"
	"unsafe"
)

// noEcho stops the terminal fd from showing what is typed, until restore.
// Where it cannot, restore does nothing and the typing shows.
func noEcho(fd uintptr) (restore func()) {
	var t syscall.Termios
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCGETS, uintptr(unsafe.Pointer(&t))); errno != 0 {
		return func() {}
	}
	quiet := t
	quiet.Lflag &^= syscall.ECHO
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&quiet))); errno != 0 {
		return func() {}
	}
	return func() { syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TCSETS, uintptr(unsafe.Pointer(&t))) } //nolint:errcheck // as it was
}
