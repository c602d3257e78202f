package sandbox

import "os/exec"

// setGroup does nothing on Windows: there is no process group to kill.
func setGroup(*exec.Cmd) bool { return false }

// killGroup is never called on Windows.
func killGroup(int) {}
