//go:build !linux

package main

// hideFromChildren does nothing where there is no /proc to hide from.
func hideFromChildren() {}
