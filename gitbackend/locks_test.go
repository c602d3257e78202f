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

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
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
	assert.Equal(t, []grove.Change{{Path: "README.md", Kind: grove.ChangeModified}}, st.Changes)

	ctx, cancel := context.WithTimeout(f.ctx, 300*time.Millisecond)
	defer cancel()
	_, err = h.Checkpoint(ctx, nil)
	assert.Equal(t, grove.Canceled, grove.CodeOf(err), "a checkpoint while git holds index.lock: %v", err)
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
	t.Parallel() // mostly waiting on git, helper processes or a clock
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
	var gb *gitbackend.Backend
	require.True(t, f.ws.Backend().As(&gb))
	require.NoError(t, gb.WaitMaintenance(f.ctx)) // it runs in the background
	count := f.git(f.repo, "count-objects", "-v")
	assert.Contains(t, count, "count: 0\n", "loose objects remain after 50 checkpoints:\n%s", count)
	assert.Contains(t, count, "packs: 1\n", "the packs were not collected:\n%s", count)
	f.git(f.repo, "fsck", "--no-progress")
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Len(t, log, 50)
	assert.True(t, strings.HasPrefix(f.git(f.repo, "for-each-ref", "--count=1", "--format=%(refname)", "refs/grove/"), "refs/grove/"))
}

// A foreign index.lock (a user's git command, or one that crashed) is
// waited for a bounded time, then the operation fails with Busy naming
// the lock — and a restore, whether it gives up or is cancelled while
// waiting, has changed nothing: not the files, not the branch.
func TestAForeignIndexLockIsBusyAfterABoundedWaitAndNothingChanged(t *testing.T) {
	f := newFixture(t)
	h := headWithLockWait(t, f, 200*time.Millisecond)
	root := h.Info().Root
	f.write(h, "README.md", "first\n")
	first, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "README.md", "second\n")
	f.write(h, "new.txt", "new\n")
	second, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	lockPath := filepath.Join(f.git(root, "rev-parse", "--absolute-git-dir"), "index.lock")
	require.NoError(t, os.WriteFile(lockPath, nil, 0o644))

	unchanged := func(what string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, "README.md"))
		require.NoError(t, err)
		assert.Equal(t, "second\n", string(data), "%s changed a file", what)
		_, err = os.Stat(filepath.Join(root, "new.txt"))
		assert.NoError(t, err, "%s deleted a file", what)
		assert.Equal(t, string(second.ID), f.git(root, "rev-parse", "HEAD"), "%s moved the branch", what)
		_, err = os.Stat(lockPath)
		assert.NoError(t, err, "%s removed a lock it did not take", what)
	}

	start := time.Now()
	_, err = h.Restore(f.ctx, grove.Rev(first.ID), &workspace.RestoreOptions{Discard: true})
	assert.Equal(t, grove.Busy, grove.CodeOf(err), "restore: %v", err)
	var be *grove.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, lockPath, be.Path, "Busy names the lock file")
	assert.Less(t, time.Since(start), 30*time.Second, "the wait is bounded")
	unchanged("a restore that gave up")

	ctx, cancel := context.WithTimeout(f.ctx, 50*time.Millisecond)
	defer cancel()
	_, err = h.Restore(ctx, grove.Rev(first.ID), &workspace.RestoreOptions{Discard: true})
	assert.Equal(t, grove.Canceled, grove.CodeOf(err), "cancelled restore: %v", err)
	unchanged("a cancelled restore")

	f.write(h, "README.md", "third\n")
	_, err = h.Checkpoint(f.ctx, nil)
	assert.Equal(t, grove.Busy, grove.CodeOf(err), "checkpoint: %v", err)
	n, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Len(t, n, 2, "a checkpoint that gave up recorded a checkpoint")
	f.write(h, "README.md", "second\n")

	require.NoError(t, os.Remove(lockPath))
	_, err = h.Restore(f.ctx, grove.Rev(first.ID), &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	assert.Equal(t, string(first.ID), f.git(root, "rev-parse", "HEAD"))
}

// A damaged index in the head's git dir (truncated, garbled header, or
// garbage over its entries) is never a dead end: status answers,
// a checkpoint captures the working tree and repairs the index, and a
// discarding restore works.
func TestADamagedIndexIsRepairedNotADeadEnd(t *testing.T) {
	damages := map[string]func(data []byte) []byte{
		"truncated":      func(d []byte) []byte { return d[:30] },
		"garbled header": func(d []byte) []byte { copy(d, "XXXXXXXX"); return d },
		"garbage entries": func(d []byte) []byte {
			for i := 12; i < len(d)-20; i++ {
				d[i] = byte(i * 7)
			}
			return d
		},
		"empty": func([]byte) []byte { return nil },
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root := h.Info().Root
			f.write(h, "README.md", "changed\n")
			f.write(h, "new.txt", "new\n")
			index := filepath.Join(f.git(root, "rev-parse", "--absolute-git-dir"), "index")
			data, err := os.ReadFile(index)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(index, damage(data), 0o644))

			st, err := h.Status(f.ctx)
			require.NoError(t, err, "status")
			assert.True(t, st.Dirty)
			assert.Contains(t, st.Changes, grove.Change{Path: "new.txt", Kind: grove.ChangeUntracked})
			_, err = h.Diff(f.ctx, "main", grove.Live)
			require.NoError(t, err, "diff")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err, "checkpoint")
			assert.Equal(t, "changed", f.git(root, "show", string(cp.ID)+":README.md"))
			assert.Equal(t, "new", f.git(root, "show", string(cp.ID)+":new.txt"))
			assert.Empty(t, f.git(root, "status", "--porcelain"), "the checkpoint repaired the index")

			require.NoError(t, os.WriteFile(index, damage(data), 0o644))
			_, err = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
			require.NoError(t, err, "restore")
			assert.Empty(t, f.git(root, "status", "--porcelain"), "the restore repaired the index")
			got, err := os.ReadFile(filepath.Join(root, "README.md"))
			require.NoError(t, err)
			assert.Equal(t, "hello\n", string(got))
			f.git(f.repo, "fsck", "--no-progress")
		})
	}
}

// A ref lock a git command outside grove holds (the head's branch's) is
// waited for the bounded time, then the checkpoint is Busy naming it and
// records nothing.
func TestAForeignRefLockIsBusyNamingIt(t *testing.T) {
	f := newFixture(t)
	h := headWithLockWait(t, f, 200*time.Millisecond)
	lockPath := filepath.Join(f.repo, ".git", "refs", "heads", "grove", "agent.lock")
	require.NoError(t, os.WriteFile(lockPath, nil, 0o644))
	f.write(h, "a.txt", "a\n")
	_, err := h.Checkpoint(f.ctx, nil)
	var be *grove.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, grove.Busy, be.Code, "%v", err)
	assert.Equal(t, lockPath, be.Path)
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, log, "a checkpoint that gave up recorded one")
	require.NoError(t, os.Remove(lockPath))
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"))
}

// headWithLockWait is a head of f's repository opened through a backend
// that waits at most wait for a lock a git command outside grove holds.
func headWithLockWait(t *testing.T, f *fixture, wait time.Duration) *workspace.Head {
	t.Helper()
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{LockWait: wait}), f.repo, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}
