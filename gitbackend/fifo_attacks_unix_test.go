//go:build unix

package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAFIFOAtTheHeadsBranchNeverBlocks: the agent replaces its head's
// branch ref, a loose file in the common git dir it can write, with a
// FIFO. Every operation checks that the branch exists: reading the FIFO
// would wait for a writer forever. The operation answers instead.
func TestAFIFOAtTheHeadsBranchNeverBlocks(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	ref := filepath.Join(f.repo, ".git", "refs", "heads", h.Info().Branch)
	require.NoError(t, os.Remove(ref))
	mkfifo(t, ref)

	done := make(chan error, 1)
	go func() { _, err := h.Status(f.ctx); done <- err }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		// Unblock the reader so that the test can end.
		if w, err := os.OpenFile(ref, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		t.Fatal("Status blocked on a FIFO at the head's branch ref")
	}
}
