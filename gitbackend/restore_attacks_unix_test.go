//go:build unix

package gitbackend_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/require"
)

// A FIFO where the record of restore targets goes does not hang a restore.
func TestAttackAFIFOForTheRestoreRecordDoesNotHangARestore(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "a.txt", "1\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	restores := filepath.Join(f.repo, ".git", "grove", "heads", string(h.Info().ID)+".restores")
	require.NoError(t, syscall.Mkfifo(restores, 0o644))
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := h.Restore(ctx, grove.Rev(cp.ID), nil); done <- err }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		if fd, err := syscall.Open(restores, syscall.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			_ = syscall.Close(fd)
		}
		t.Fatal("the restore hung on a FIFO")
	}
}
