//go:build !unix

package client

import (
	"os/exec"
	"syscall"
)

// ownGroup does nothing where there are no process groups: only the
// command itself is stopped.
func ownGroup(*exec.Cmd) {}

// signalGroup signals the command, the only process known here.
func (p *process) signalGroup(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		p.cmd.Process.Kill()
		return
	}
	p.cmd.Process.Signal(sig)
}

// groupAlive reports whether the command still runs.
func (p *process) groupAlive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}
