//go:build !unix

package pgtest

import "os/exec"

// ownGroup leaves cmd in grove's process group: there is none to make.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
