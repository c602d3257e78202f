package main

import (
	"os/exec"
	"syscall"
)

// dieWithGrove makes c's process die when grove does (Pdeathsig): a grove
// run that is killed does not leave its command working in the head while
// the next run takes the head over. (The command's own children are its
// to end.)
func dieWithGrove(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
