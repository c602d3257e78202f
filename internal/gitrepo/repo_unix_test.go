//go:build unix

package gitrepo

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An agent can put a FIFO where a head's index is: manyFiles neither
// blocks on it nor reads it as an index.
func TestManyFilesDoesNotWaitOnAFIFO(t *testing.T) {
	rp, _ := testRepo(t)
	fifo := filepath.Join(t.TempDir(), "index")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan bool, 1)
	go func() { done <- rp.ManyFiles(fifo) }()
	select {
	case many := <-done:
		require.False(t, many, "the FIFO is passed over for the main index, of one entry")
	case <-time.After(10 * time.Second):
		t.Fatal("manyFiles blocked on a FIFO")
	}
}
