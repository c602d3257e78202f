// On Windows there are no FIFOs in the file namespace: a test that plants
// one is skipped. A lock file is held the way grove itself takes it
// (internal/lock), there being no flock(1).

package gitbackend_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/lock"
)

// mkfifo skips the test: Windows has no FIFOs.
func mkfifo(t *testing.T, _ string) {
	t.Helper()
	t.Skip("Windows has no FIFOs")
}

// mkfifoQuiet does nothing: Windows has no FIFOs.
func mkfifoQuiet(string) {}

// holdLock takes the lock file at path and returns its release.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	l, err := lock.TryLock(path, "agent")
	require.NoError(t, err)
	return func() { _ = l.Unlock() }
}
