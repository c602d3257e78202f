//go:build unix

// On Unix an agent with a shell can plant a FIFO where grove reads, and
// hold grove's lock files with flock(1).

package gitbackend_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// mkfifo makes a FIFO at p.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(p, 0o644))
}

// mkfifoQuiet makes a FIFO at p if it can, as an agent racing grove does.
func mkfifoQuiet(p string) { _ = syscall.Mkfifo(p, 0o644) }

// holdLock takes the lock file at path as `flock path sleep inf` would,
// and returns its release.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(fh.Fd()), syscall.LOCK_EX))
	return func() {
		_ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN)
		_ = fh.Close()
	}
}
