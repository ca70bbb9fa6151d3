//go:build unix

package sandbox

import "syscall"

// procAttr puts a worker in its own process group, so a terminal's Ctrl-C
// reaches the server alone; workers end when the server's pipe closes.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
