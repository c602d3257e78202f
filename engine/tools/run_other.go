//go:build !unix

package tools

import "os/exec"

func setGroup(*exec.Cmd) {}

// killGroup kills c's process; its children are not reached here.
func killGroup(c *exec.Cmd) {
	if c.Process != nil {
		_ = c.Process.Kill()
	}
}
