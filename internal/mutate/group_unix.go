//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// inGroup runs cmd in a process group of its own and makes its
// cancellation kill that whole group: go test, and the test binaries and
// git processes under it.
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
