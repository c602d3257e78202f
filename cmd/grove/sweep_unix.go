//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach runs c in a session of its own: a Ctrl+C in grove's terminal
// does not reach it, and it outlives grove.
func detach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
