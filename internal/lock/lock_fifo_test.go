//go:build unix

// On Unix a FIFO can be planted where a lock file belongs.

package lock_test

import "syscall"

// mkfifo makes a FIFO at p.
var mkfifo = func(p string) error { return syscall.Mkfifo(p, 0o644) }
