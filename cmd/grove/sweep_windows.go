package main

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// detach runs c in a process group of its own, without a console.
func detach(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}
