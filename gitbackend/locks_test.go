package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/workspace"
)

// While a user's git command holds the head's index.lock, Status still
// answers (it takes no lock), and a checkpoint waits for the lock instead
// of failing, giving up only when its context ends.
func TestStatusPollsWhileGitHoldsTheIndexLock(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.write(h, "README.md", "changed\n")
	lockPath := filepath.Join(f.git(root, "rev-parse", "--absolute-git-dir"), "index.lock")
	require.NoError(t, os.WriteFile(lockPath, nil, 0o644))

	st, err := h.Status(f.ctx)
	require.NoError(t, err, "status while index.lock is held")
	assert.Equal(t, []backend.Change{{Path: "README.md", Kind: backend.ChangeModified}}, st.Changes)

	ctx, cancel := context.WithTimeout(f.ctx, 300*time.Millisecond)
	defer cancel()
	_, err = h.Checkpoint(ctx, nil)
	assert.Equal(t, backend.Canceled, workspace.CodeOf(err), "a checkpoint while git holds index.lock: %v", err)
	data, err := os.ReadFile(lockPath)
	require.NoError(t, err, "grove removed a lock it did not take")
	assert.Empty(t, data)

	require.NoError(t, os.Remove(lockPath))
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.True(t, cp.New)
	assert.Empty(t, f.git(root, "status", "--porcelain"))
}

// Plumbing never runs git's automatic collection, so grove runs git gc
// --auto now and then: after enough checkpoints the loose objects are
// packed.
func TestCheckpointsRunGitGCAuto(t *testing.T) {
	f := newFixture(t)
	// Two packs over a limit of one: git gc --auto will collect for sure.
	f.git(f.repo, "repack", "-q")
	f.git(f.repo, "commit", "-q", "--allow-empty", "-m", "another")
	f.git(f.repo, "repack", "-q")
	f.git(f.repo, "config", "gc.autoPackLimit", "1")
	h := f.head("agent")
	for i := range 50 {
		f.write(h, fmt.Sprintf("f%d.txt", i), fmt.Sprintf("%d\n", i))
		_, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
	}
	count := f.git(f.repo, "count-objects", "-v")
	assert.Contains(t, count, "count: 0\n", "loose objects remain after 50 checkpoints:\n%s", count)
	assert.Contains(t, count, "packs: 1\n", "the packs were not collected:\n%s", count)
	f.git(f.repo, "fsck", "--no-progress")
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Len(t, log, 50)
	assert.True(t, strings.HasPrefix(f.git(f.repo, "for-each-ref", "--count=1", "--format=%(refname)", "refs/grove/"), "refs/grove/"))
}
