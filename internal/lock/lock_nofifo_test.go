//go:build !unix

// Windows has no FIFOs in the file namespace: no FIFO is planted.

package lock_test

// mkfifo is nil: there is no FIFO to make.
var mkfifo func(p string) error
