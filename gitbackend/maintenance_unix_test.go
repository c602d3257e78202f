//go:build unix

package gitbackend_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// A git worktree prune run beside git worktree add can take the new
// registration while git writes it (seen under the maintenance stress
// test; a stand-in git makes it happen on demand): the create is undone
// and made again, never Internal, and nothing of the first try is left.
func TestACreateRacedByWorktreePruneIsMadeAgain(t *testing.T) {
	f := newFixture(t)
	real, err := exec.LookPath("git")
	require.NoError(t, err)
	dir := t.TempDir()
	once := filepath.Join(dir, "raced")
	fake := filepath.Join(dir, "git")
	require.NoError(t, os.WriteFile(fake, []byte(`#!/bin/sh
for a in "$@"; do
  if [ "$a" = add ] && [ ! -e `+once+` ]; then
    touch `+once+`
    `+real+` "$@" || exit $?
    for g in "$GIT_DIR"/worktrees/*/gitdir; do rm -rf "$(dirname "$g")"; done
    echo "fatal: could not open '$GIT_DIR/worktrees/x/gitdir' for writing: No such file or directory" >&2
    exit 128
  fi
done
exec `+real+` "$@"
`), 0o755))
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{Git: fake}), f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.FileExists(t, once, "the race happened")
	assert.Equal(t, "grove/agent", h.Info().Branch, "the first try's branch was undone, not taken")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty)
	f.git(f.repo, "fsck", "--no-progress")
	assert.NotContains(t, f.git(f.repo, "worktree", "list", "--porcelain"), "prunable")
}
