//go:build !unix

package main

import "os/exec"

// inGroup leaves cmd as it is: without process groups, cancellation kills
// only the go command itself.
func inGroup(*exec.Cmd) {}
