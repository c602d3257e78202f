//go:build !linux

package lock

// displacedHolder cannot tell outside Linux (no list of the kernel's
// locks): a lock file something else took the place of is replaced.
func displacedHolder(string) bool { return false }
