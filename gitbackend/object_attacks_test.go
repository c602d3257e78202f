package gitbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attacks through the object store and refs an agent can write:
// alternates, symbolic branch refs, replace objects, promisor remotes.

// An alternates file naming the repository's own object directory (which
// git skips, and a reader that follows it recurses through for ever) and
// a HEAD naming an object that does not exist: the checkpoint fails with a
// typed error; grove neither crashes nor hangs.
func TestAttackAlternatesLoopAndMissingHead(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	common := filepath.Join(f.repo, ".git")
	require.NoError(t, os.MkdirAll(filepath.Join(common, "objects", "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(common, "objects", "info", "alternates"), []byte("objects\n"+filepath.Join(common, "objects")+"\n"), 0o644))
	admin := strings.TrimSpace(f.git(h.Info().Root, "rev-parse", "--absolute-git-dir"))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "HEAD"), []byte(strings.Repeat("ab", 20)+"\n"), 0o644))
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	_, err := h.Checkpoint(ctx, nil)
	require.Error(t, err)
	require.NotEqual(t, grove.Canceled, grove.CodeOf(err), "answered, not timed out: %v", err)
	require.NoError(t, os.WriteFile(filepath.Join(admin, "HEAD"), []byte("ref: refs/heads/"+h.Info().Branch+"\n"), 0o644))
	_, err = h.Checkpoint(ctx, nil)
	require.NoError(t, err, "with its HEAD back, the head checkpoints again")
}

// An agent turns its own branch into a symbolic ref to main: neither a
// checkpoint nor a restore moves main.
func TestAttackBranchMadeSymbolicRef(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	mainBefore := f.git(f.repo, "rev-parse", "refs/heads/main")
	// What an agent's git symbolic-ref would write (git refuses to point
	// a branch that a worktree has checked out elsewhere only by name).
	f.git(h.Info().Root, "symbolic-ref", "refs/heads/"+h.Info().Branch, "refs/heads/main")
	f.write(h, "x.txt", "x")
	_, _ = h.Checkpoint(f.ctx, nil)
	require.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "refs/heads/main"), "a checkpoint moved main")
	_, _ = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "refs/heads/main"), "a restore moved main")
	f.git(f.repo, "fsck", "--strict")
}

// A replacement object (refs/replace/<commit>) for the head's commit, as
// an agent can write: grove reads the commit itself, in-process or
// through git, so a checkpoint with no change records nothing.
func TestAttackReplaceObjects(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	f.write(h, "x.txt", "x")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.git(f.repo, "gc", "-q") // packed: only git can read it now
	f.git(f.repo, "replace", string(cp.ID), "main")
	again, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.False(t, again.New, "the head has not changed")
	require.Equal(t, cp.ID, again.ID)
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	require.False(t, st.Dirty)
}

// TestAPromisorRemoteNeverRunsItsUploadPack: a remote marked promisor
// makes git fetch any object it misses from that remote, and for a local
// URL git runs remote.<name>.uploadpack through the shell. The agent puts
// an index entry naming a missing blob; no grove command fetches.
func TestAPromisorRemoteNeverRunsItsUploadPack(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	other := filepath.Join(t.TempDir(), "other")
	f.git(t.TempDir(), "init", "-q", "--bare", other)
	f.git(root, "config", "remote.evil.url", other)
	f.git(root, "config", "remote.evil.promisor", "true")
	f.git(root, "config", "remote.evil.uploadpack", script+"; git-upload-pack")
	plant := func() {
		f.write(h, "ghost.txt", "ghost\n")
		f.git(root, "update-index", "--add", "--info-only", "--cacheinfo", "100644,"+strings.Repeat("ab", 20)+",ghost.txt")
		f.git(root, "update-index", "--assume-unchanged", "ghost.txt")
	}
	plant()
	// Control: plain git write-tree in the head runs it.
	_, _ = gitUser(f.ctx, root, "write-tree")
	require.Contains(t, markersIn(t, markers), "pwned", "plain git does not run the uploadpack command, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))

	f.write(h, "work.txt", "work\n")
	_, err := h.Checkpoint(f.ctx, nil)
	assert.NotEqual(t, grove.Internal, grove.CodeOf(err), "checkpoint: %v", err)
	_, _ = h.Diff(f.ctx, "main", grove.Live)
	_, _ = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	assert.Empty(t, markersIn(t, markers), "grove ran remote.evil.uploadpack")
}
