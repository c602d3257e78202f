//go:build unix

package backendtest

import "syscall"

// restrictUmask sets this process's umask to 077, under which a file made
// with 0755 is 0700.
func restrictUmask() { syscall.Umask(0o077) }
