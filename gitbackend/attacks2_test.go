package gitbackend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/workspace"
)

// Attacks from a second security review, kept as regression tests: every
// one succeeded against grove when the review was made.

// filterAttack2 is filterAttack with the outcome returned: whether grove's
// checkpoint ran the planted driver, and its error.
func filterAttack2(t *testing.T, driver string, plant func(f *fixture, h *workspace.Head, script string)) (ran bool, err error) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	plant(f, h, script)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".gitattributes"), []byte("*.x filter="+driver+"\n"), 0o644))
	f.write(h, "f.x", "one\n")
	_, _ = gitUser(f.ctx, root, "add", "f.x")
	require.Contains(t, markersIn(t, markers), "pwned", "the planted driver does not run for plain git, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))
	f.write(h, "f.x", "two, longer\n")
	_, err = h.Checkpoint(f.ctx, nil)
	return len(markersIn(t, markers)) > 0, err
}

// TestAnIncludeRelativeToGitsInstallationIsRefused: git expands an
// include path starting with "%(prefix)/" to its installation prefix, so
// "%(prefix)/../<absolute path>" names any file; grove refuses such a
// configuration (FailedPrecondition) and runs nothing.
func TestAnIncludeRelativeToGitsInstallationIsRefused(t *testing.T) {
	ran, err := filterAttack2(t, "pfx", func(f *fixture, h *workspace.Head, script string) {
		cfg := filepath.Join(h.Info().Root, "evil.cfg") // the agent's own file
		require.NoError(t, os.WriteFile(cfg, []byte("[filter \"pfx\"]\n\tclean = "+script+"\n"), 0o644))
		appendFile(t, filepath.Join(commonOf(f), "config"), "[include]\n\tpath = %(prefix)/../../../../../../.."+cfg+"\n")
	})
	assert.False(t, ran, "grove's checkpoint ran the driver included through %%(prefix)/")
	assert.Equal(t, workspace.FailedPrecondition, workspace.CodeOf(err), "checkpoint: %v", err)
}

// TestAnIncludeThroughASymlinkAndDotDotIsFollowedAsGitFollowsIt: git hands
// an include path to open(2), where "lnk/.." is the parent of lnk's
// target, not the directory holding lnk; grove never cleans the path as
// text.
func TestAnIncludeThroughASymlinkAndDotDotIsFollowedAsGitFollowsIt(t *testing.T) {
	ran, err := filterAttack2(t, "dd", func(f *fixture, h *workspace.Head, script string) {
		root := h.Info().Root
		require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "a", "evil.cfg"), []byte("[filter \"dd\"]\n\tclean = "+script+"\n"), 0o644))
		require.NoError(t, os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(commonOf(f), "lnk")))
		appendFile(t, filepath.Join(commonOf(f), "config"), "[include]\n\tpath = lnk/../evil.cfg\n")
	})
	assert.False(t, ran, "grove's checkpoint ran the driver included through lnk/..")
	assert.NoError(t, err)
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
	assert.NotEqual(t, workspace.Internal, workspace.CodeOf(err), "checkpoint: %v", err)
	_, _ = h.Diff(f.ctx, "main", workspace.Live)
	_, _ = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	assert.Empty(t, markersIn(t, markers), "grove ran remote.evil.uploadpack")
}

// TestAnEditHiddenBehindIndexMarksIsCaptured: the agent marks a tracked
// file assume-unchanged (or skip-worktree) in its index, then edits it.
// git add -A trusts the mark; grove clears it on its private index, so
// the checkpoint holds the edit, and a destroy loses nothing.
func TestAnEditHiddenBehindIndexMarksIsCaptured(t *testing.T) {
	for _, bit := range []string{"--assume-unchanged", "--skip-worktree"} {
		t.Run(bit, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root := h.Info().Root
			f.git(root, "update-index", bit, "README.md")
			f.write(h, "README.md", "precious unsaved work\n")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, "precious unsaved work", f.git(f.repo, "show", string(cp.ID)+":README.md"), "the checkpoint holds the edit")
			f.write(h, "README.md", "more precious work\n")
			res, err := h.Destroy(f.ctx, nil)
			require.NoError(t, err, "destroy without Discard")
			require.NotNil(t, res.Final, "destroy took no final checkpoint of the edit")
			assert.Equal(t, "more precious work", f.git(f.repo, "show", string(res.Final.ID)+":README.md"))
		})
	}
}

// TestARestoreNeverDeletesAFileIgnoredBeforeIt: an ignored file is never
// captured; restoring a checkpoint whose .gitignore does not ignore it
// wrote that .gitignore, then git clean deleted the file. What is ignored
// before the restore stays.
func TestARestoreNeverDeletesAFileIgnoredBeforeIt(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	require.NoError(t, os.WriteFile(filepath.Join(root, ".gitignore"), []byte("ignored/\n*.log\n"), 0o644))
	old, err := h.Checkpoint(f.ctx, nil) // main's .gitignore: no "notes.txt"
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, ".gitignore"), []byte("ignored/\n*.log\nnotes.txt\n"), 0o644))
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "notes.txt", "unsaved notes\n") // ignored now: no checkpoint holds it
	_, err = h.Restore(f.ctx, workspace.Rev(old.ID), nil)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "notes.txt"))
	require.NoError(t, err, "the restore deleted an ignored file no checkpoint holds")
	assert.Equal(t, "unsaved notes\n", string(data))
}

// TestASparseCheckoutTurnedOnInAHeadIsIgnored: the agent turns on
// core.sparseCheckout (refused at open) and writes its own
// info/sparse-checkout; git add -A would leave out every path outside it
// and fail. grove's commands never honour it: the checkpoint holds
// everything.
func TestASparseCheckoutTurnedOnInAHeadIsIgnored(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	admin := adminOf(t, root)
	require.NoError(t, os.MkdirAll(filepath.Join(admin, "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "info", "sparse-checkout"), []byte("/README.md\n/.gitignore\n/src/\n/bin/\n"), 0o644))
	f.git(root, "config", "core.sparseCheckout", "true")
	f.write(h, "new/precious.txt", "unsaved\n")
	f.write(h, "README.md", "edited\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "unsaved", f.git(f.repo, "show", string(cp.ID)+":new/precious.txt"))
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
}

// TestALogOutputEncodingChangesNothingGroveReads: i18n.logOutputEncoding
// would re-encode the git log output grove parses.
func TestALogOutputEncodingChangesNothingGroveReads(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.git(root, "config", "i18n.logOutputEncoding", "UTF-16")
	_, err := h.Checkpoint(f.ctx, nil) // nothing new: reads the commit with git log
	require.NoError(t, err)
}
