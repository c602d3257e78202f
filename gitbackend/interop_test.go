package gitbackend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// The tests in this file check grove's heads with the real git binary, as
// a user at a shell would see them.

func TestHeadIsAWorktreeGitLists(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	list := f.git(f.repo, "worktree", "list", "--porcelain")
	assert.Contains(t, list, "worktree "+h.Info().Root+"\n")
	assert.Contains(t, list, "branch refs/heads/grove/agent")
	assert.Equal(t, "grove/agent", f.git(h.Info().Root, "rev-parse", "--abbrev-ref", "HEAD"))
}

func TestGitStatusIsCleanAfterACheckpoint(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.write(h, "README.md", "changed\n")
	f.write(h, "new/file.txt", "new\n")
	f.write(h, "ignored/cache.bin", "ignored\n")
	require.NoError(t, os.Remove(filepath.Join(root, "src/main.go")))
	require.NoError(t, os.Chmod(filepath.Join(root, "README.md"), 0o755))
	require.NotEmpty(t, f.git(root, "status", "--porcelain"))

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.True(t, cp.New)
	assert.Empty(t, f.git(root, "status", "--porcelain"), "git status inside the head after a checkpoint")
	assert.Equal(t, string(cp.ID), f.git(root, "rev-parse", "HEAD"))
	assert.Equal(t, "commit", f.git(f.repo, "cat-file", "-t", string(cp.ID)))
	assert.Equal(t, "100755", strings.Fields(f.git(root, "ls-files", "-s", "README.md"))[0])
	assert.Empty(t, f.git(root, "ls-files", "ignored"), "the ignored file was captured")
}

func TestEveryCheckpointIsACommitAndFsckIsClean(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	var ids []grove.CheckpointID
	for i, content := range []string{"one\n", "two\n", "three\n"} {
		f.write(h, "n.txt", content)
		cp, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Message: "step " + string(rune('a'+i))})
		require.NoError(t, err)
		ids = append(ids, cp.ID)
	}
	_, err := h.Restore(f.ctx, grove.Rev(ids[0]), nil)
	require.NoError(t, err)
	fork, err := h.Fork(f.ctx, "experiment", &workspace.ForkOptions{From: grove.Rev(ids[1])})
	require.NoError(t, err)
	f.write(fork, "fork.txt", "f\n")
	fcp, err := fork.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	ids = append(ids, fcp.ID)
	_, err = fork.Destroy(f.ctx, nil)
	require.NoError(t, err)
	for _, id := range ids {
		assert.Equal(t, "commit", f.git(f.repo, "cat-file", "-t", string(id)))
		assert.Contains(t, f.git(f.repo, "for-each-ref", "--points-at", string(id), "refs/grove/"), "refs/grove/")
	}
	f.git(f.repo, "fsck", "--strict", "--no-progress")
	f.git(f.repo, "worktree", "prune")
	list := f.git(f.repo, "worktree", "list", "--porcelain")
	assert.NotContains(t, list, "experiment")
	assert.Contains(t, list, h.Info().Root)
	assert.Equal(t, string(ids[0]), f.git(f.repo, "rev-parse", "grove/agent"), "the branch was reset to the first checkpoint")
	assert.Equal(t, string(fcp.ID), f.git(f.repo, "rev-parse", "grove/experiment"), "destroy keeps the branch")
}

func TestWorktreePruneKeepsALiveHead(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.git(f.repo, "worktree", "prune", "--expire", "now")
	assert.Contains(t, f.git(f.repo, "worktree", "list", "--porcelain"), h.Info().Root)
	require.NoError(t, h.Close())
	h2, err := workspace.Reopen(f.ctx, f.ws.Backend(), h.Binding(), nil)
	require.NoError(t, err)
	require.NoError(t, h2.Close())
}

// snapshot is what an attached checkout's user owns besides files: the
// branch, HEAD, the index file's bytes and the staged changes.
func attachedState(f *fixture) [4]string {
	index, err := os.ReadFile(filepath.Join(f.repo, ".git", "index"))
	require.NoError(f.t, err)
	return [4]string{
		f.git(f.repo, "rev-parse", "refs/heads/main"),
		f.git(f.repo, "symbolic-ref", "HEAD"),
		string(index),
		f.git(f.repo, "diff", "--cached", "--no-ext-diff"),
	}
}

func TestAttachedCheckoutKeepsBranchIndexAndStagedChanges(t *testing.T) {
	f := newFixture(t)
	// The user has staged one change and left another unstaged.
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("staged\n"), 0o644))
	f.git(f.repo, "add", "README.md")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "src/main.go"), []byte("package main // unstaged\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "untracked.txt"), []byte("u\n"), 0o644))
	before := attachedState(f)

	h, err := f.ws.Attach(f.ctx, "mine", f.repo)
	require.NoError(t, err)
	cp1, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, cp1.New)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "later.txt"), []byte("l\n"), 0o644))
	cp2, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, before[0], string(cp2.Parent), "an attached head's checkpoint's parent is the checkout's HEAD")
	cp3, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, cp3.New)
	assert.Equal(t, cp2.ID, cp3.ID)
	assert.Equal(t, before, attachedState(f), "checkpoints changed the attached checkout's branch, index or staging")

	// The checkpoint holds the working tree, staged and unstaged alike.
	assert.Equal(t, "staged", f.git(f.repo, "show", string(cp2.ID)+":README.md"))
	assert.Equal(t, "package main // unstaged", f.git(f.repo, "show", string(cp2.ID)+":src/main.go"))
	assert.Equal(t, "u", f.git(f.repo, "show", string(cp2.ID)+":untracked.txt"))

	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, before, attachedState(f), "destroy changed the attached checkout's branch, index or staging")
	data, err := os.ReadFile(filepath.Join(f.repo, "later.txt"))
	require.NoError(t, err)
	assert.Equal(t, "l\n", string(data))
}

func TestCheckpointWithAMergeInProgressLeavesIndexAndBranch(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	// Two branches that conflict on README.md, merged inside the head.
	f.git(f.repo, "checkout", "-q", "-b", "other")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("theirs\n"), 0o644))
	f.git(f.repo, "commit", "-qam", "theirs")
	f.write(h, "README.md", "ours\n")
	f.git(root, "commit", "-qam", "ours")
	_, err := gitUser(f.ctx, root, "merge", "other")
	require.Error(t, err, "the merge should conflict")
	branchBefore := f.git(f.repo, "rev-parse", "grove/agent")
	indexBefore, err := os.ReadFile(filepath.Join(f.git(root, "rev-parse", "--absolute-git-dir"), "index"))
	require.NoError(t, err)

	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, grove.OpMerge, st.InProgress)
	assert.Equal(t, []string{"README.md"}, st.Conflicts)

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.True(t, cp.New)
	assert.Equal(t, branchBefore, f.git(f.repo, "rev-parse", "grove/agent"), "the branch moved during a merge")
	indexAfter, err := os.ReadFile(filepath.Join(f.git(root, "rev-parse", "--absolute-git-dir"), "index"))
	require.NoError(t, err)
	assert.Equal(t, indexBefore, indexAfter, "the index (with its conflict) changed")
	assert.Contains(t, f.git(f.repo, "show", string(cp.ID)+":README.md"), "<<<<<<<")
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, cp.ID, log[0].ID)
}

// A same-size edit made within the second the head's index was written
// is still captured: grove's private index keeps git's racy-git check.
func TestSameSizeEditsInOneSecondAreCaptured(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	for i := range 20 {
		f.write(h, "f.txt", fmt.Sprintf("v%d\n", i%10))
		cp, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		require.True(t, cp.New, "edit %d was not captured", i)
		assert.Equal(t, fmt.Sprintf("v%d", i%10), f.git(f.repo, "show", string(cp.ID)+":f.txt"))
	}
}

// A branch moved by a user's git command while a checkpoint runs makes the
// checkpoint fail with Conflict (the compare-and-swap lost), never move the
// branch back.
func TestCheckpointLosesCleanlyWhenTheBranchMoves(t *testing.T) {
	f := newFixture(t)
	b := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	f.write(h, "a.txt", "a\n")
	// Move the branch at the moment the commit is written, before the ref
	// transaction: as a user's git commit racing the checkpoint would.
	other := f.git(f.repo, "commit-tree", "-p", "main", "-m", "racer", f.git(f.repo, "rev-parse", "main^{tree}"))
	gitbackend.SetCrashHook(b, func(point string) {
		if point == "checkpoint:committed" {
			f.git(f.repo, "update-ref", "refs/heads/grove/agent", other)
		}
	})
	_, err = h.Checkpoint(f.ctx, nil)
	assert.Equal(t, grove.Conflict, grove.CodeOf(err), "error: %v", err)
	assert.Equal(t, other, f.git(f.repo, "rev-parse", "grove/agent"), "the racer's commit was overwritten")
}
