package gitbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FIFOs where grove expects files: none blocks an operation.

// TestATrackedFileReplacedByAFIFOIsSkippedNotAFailure: the threat
// model says irregular files never make a checkpoint fail; git add -A
// skips an untracked FIFO, but one at a tracked path is "can only add
// regular files, symbolic links or git-directories", fatal. retryOnIndex
// rebuilds the index and fails the same way: no checkpoint can be taken,
// and Destroy without Discard (which checkpoints first) fails as well.
// Both ways a checkpoint stages changes are attacked: git add -A when
// there is a new file, git add -u when only tracked files changed.
func TestATrackedFileReplacedByAFIFOIsSkippedNotAFailure(t *testing.T) {
	for _, work := range []string{"work.txt", "src/main.go"} {
		t.Run(work, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root := h.Info().Root
			f.write(h, work, "unsaved work\n")
			require.NoError(t, os.Remove(filepath.Join(root, "README.md")))
			mkfifo(t, filepath.Join(root, "README.md"))

			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.Contains(t, cp.Skipped, grove.Skipped{Path: "README.md", Reason: grove.SkipIrregular})
			assert.Equal(t, "unsaved work", f.git(f.repo, "show", string(cp.ID)+":"+work))
			_, err = h.Destroy(f.ctx, nil)
			require.NoError(t, err)
		})
	}
}

// TestAnFSReadOfAFIFONeverBlocks: the agent (with a shell) makes
// a file of its head a FIFO. The orchestrator's h.FS().ReadFile opens it
// for reading, which waits for a writer that never comes: the FS has no
// context, so the call blocks forever (WriteFileIf would also hold the
// head's compare-and-set mutex meanwhile). grove's own reads of git's
// files use O_NONBLOCK and refuse irregular files (regfile.Read); the FS
// does not.
func TestAnFSReadOfAFIFONeverBlocks(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	p := filepath.Join(root, "notes.txt")
	mkfifo(t, p)

	for _, call := range []struct {
		name string
		fn   func() error
	}{
		{"ReadFile", func() error { _, err := h.FS().ReadFile("notes.txt"); return err }},
		{"Open", func() error {
			fh, err := h.FS().Open("notes.txt")
			if err == nil {
				_ = fh.Close()
			}
			return err
		}},
	} {
		done := make(chan error, 1)
		go func() { done <- call.fn() }()
		select {
		case err := <-done:
			assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%s of a FIFO: %v", call.name, err)
		case <-time.After(5 * time.Second):
			t.Errorf("%s of a FIFO is still blocked after 5 s", call.name)
			// Unblock it, so the goroutine ends.
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = w.Close()
			}
			<-done
		}
	}
}

// fifoWedge replaces name in the head's git dir with a FIFO and runs op
// with a 1s context. Reading a FIFO blocks in open(2) until a writer
// comes, where no context reaches. It returns how long op took; the FIFO
// is fed after wait, so that a test of a grove that blocks still ends.
func fifoWedge(t *testing.T, f *fixture, h *workspace.Head, name string, wait time.Duration, op func(ctx context.Context) error) (time.Duration, error) {
	t.Helper()
	p := filepath.Join(adminOf(t, h.Info().Root), name)
	data, _ := os.ReadFile(p)
	require.NoError(t, os.Remove(p))
	mkfifo(t, p)
	ctx, cancel := context.WithTimeout(f.ctx, time.Second)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- op(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(wait):
		// Still blocked long after its context: feed the FIFO.
		w, oerr := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		require.NoError(t, oerr, "nobody is reading the FIFO")
		_, _ = w.Write(data)
		_ = w.Close()
		err = <-done
	}
	took := time.Since(start)
	_ = os.Remove(p)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return took, err
}

// TestAFIFOInTheHeadsGitDirNeverBlocks: the agent replaces a file of its
// own git dir with a FIFO. grove never opens one for reading: the head is
// refused with a typed error, or (for its index) repaired.
func TestAFIFOInTheHeadsGitDirNeverBlocks(t *testing.T) {
	for _, name := range []string{"grove-head-id", "commondir", "index", "gitdir", "HEAD"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			f.write(h, "work.txt", "work\n")
			took, err := fifoWedge(t, f, h, name, 4*time.Second, func(ctx context.Context) error {
				_, err := h.Checkpoint(ctx, nil)
				return err
			})
			assert.Less(t, took, 3*time.Second, "the checkpoint blocked past its context")
			assert.NotContains(t, []grove.Code{grove.Internal, grove.Canceled}, grove.CodeOf(err), "checkpoint: %v", err)
		})
	}
}
