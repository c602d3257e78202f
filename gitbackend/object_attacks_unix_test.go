//go:build unix

package gitbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A FIFO where HEAD's loose object would be: nothing in-process opens it
// (it would block), and the operation ends with its context.
func TestAttackFIFOLooseObject(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newFixture(t)
	h := f.head("a")
	f.write(h, "x.txt", "x")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	// The checkpoint's commit is a loose object: swap it for a FIFO.
	obj := filepath.Join(f.repo, ".git", "objects", string(cp.ID)[:2], string(cp.ID)[2:])
	require.NoError(t, os.Chmod(filepath.Dir(obj), 0o755))
	require.NoError(t, os.Remove(obj))
	require.NoError(t, syscall.Mkfifo(obj, 0o644))
	ctx, cancel := context.WithTimeout(f.ctx, 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := h.Status(ctx); done <- err }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Status hung on a FIFO object past its context")
	}
	require.NoError(t, os.Remove(obj))
}
