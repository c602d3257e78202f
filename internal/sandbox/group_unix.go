//go:build unix && !linux

package sandbox

import (
	"os/exec"
	"syscall"
)

// setGroup starts cmd in a process group of its own.
func setGroup(cmd *exec.Cmd) bool {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return true
}

// killGroup kills the process group pid leads.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
