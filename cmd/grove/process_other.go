//go:build !linux

package main

import "os/exec"

// dieWithGrove does nothing where the kernel cannot tie a child's life to
// its parent's: there, a killed grove run's command outlives it.
func dieWithGrove(*exec.Cmd) {}
