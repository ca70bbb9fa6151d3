//go:build unix

package client

import (
	"os/exec"
	"syscall"
)

// ownGroup makes the command the leader of a new process group. npx, uvx
// and shell scripts start the real server as a child, which would outlive
// the command if only the command were stopped; signalling the group
// reaches them all. It also keeps a terminal's Ctrl-C from reaching the
// servers before AdaptBot has closed them.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signalGroup sends sig to every process of the command's group, the
// command itself included if it still runs.
func (p *process) signalGroup(sig syscall.Signal) {
	syscall.Kill(-p.cmd.Process.Pid, sig)
}

// groupAlive reports whether any process of the command's group is left
// (one that has exited but not been waited for by its parent yet counts).
func (p *process) groupAlive() bool {
	return syscall.Kill(-p.cmd.Process.Pid, 0) == nil
}
