package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// assertDestroyedClean checks what a finished destroy leaves: no
// directory, no registration, the branch and checkpoints kept, nothing
// in the trash once deletions end, and git fsck and worktree list clean.
func assertDestroyedClean(t *testing.T, f *fixture, b *gitbackend.Backend, name, dir, branch string, cp grove.CheckpointID) {
	t.Helper()
	require.NoError(t, b.WaitDeletions(f.ctx))
	assert.NoDirExists(t, dir)
	ents, _ := os.ReadDir(filepath.Join(filepath.Dir(dir), ".grove-trash"))
	assert.Empty(t, ents, "the trash is emptied")
	assert.NotContains(t, f.git(f.repo, "worktree", "list", "--porcelain"), dir)
	assert.NotContains(t, f.git(f.repo, "worktree", "prune", "--dry-run", "-v"), name, "no registration is left for prune to find")
	assert.Equal(t, string(cp), f.git(f.repo, "rev-parse", "refs/heads/"+branch), "the branch stays")
	assert.NotEmpty(t, f.git(f.repo, "for-each-ref", "refs/grove/"), "the checkpoint refs stay")
	f.git(f.repo, "fsck", "--no-progress")
}

func TestDestroyMovesTheHeadAsideAndDeletesItInTheBackground(t *testing.T) {
	f := newFixture(t)
	b := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	f.write(h, "work.txt", "work\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	info := h.Info()

	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
	assert.NoDirExists(t, info.Root, "the head's directory is gone when Destroy returns")
	assertDestroyedClean(t, f, b, "agent", info.Root, info.Branch, cp.ID)

	_, err = workspace.Reopen(f.ctx, b, h.Binding(), nil)
	assert.Equal(t, grove.Destroyed, grove.CodeOf(err))
	// The name is free again, at the same directory.
	h2, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, info.Root, h2.Info().Root)
	require.NoError(t, h2.Close())
}

// A destroy killed after its directory moved to the trash is finished by
// the next open of the workspace: tombstone, registration, trash.
func TestKillDuringDestroyIsFinishedByTheNextOpen(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	for _, r := range killRuns("destroy:marked", "destroy:trashed") {
		t.Run(r.String(), func(t *testing.T) {
			f := newBigFixture(t, 250)
			h := f.head("agent")
			f.write(h, "work.txt", "work\n")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			info, bind := h.Info(), h.Binding()
			data, err := bind.Encode()
			require.NoError(t, err)
			require.NoError(t, h.Close())

			cmd := startHelper(t, helperJob{Op: "destroy", Repo: f.repo, Binding: data, Point: r.point})
			kill(t, cmd, r.delay)

			b := gitbackend.New(gitbackend.Options{})
			ws, err := workspace.Open(f.ctx, b, f.repo, nil)
			require.NoError(t, err)
			defer ws.Close()
			h, err = workspace.Reopen(f.ctx, b, bind, nil)
			if err == nil {
				// Killed before the directory moved: the head is whole.
				st, err := h.Status(f.ctx)
				require.NoError(t, err)
				assert.False(t, st.Dirty)
				require.NoError(t, h.Close())
				return
			}
			require.Equal(t, grove.Destroyed, grove.CodeOf(err), "reopening: %v", err)
			assertDestroyedClean(t, f, b, "agent", info.Root, info.Branch, cp.ID)
		})
	}
}

// The trash is found from grove's tombstones, never from what lies in a
// trash directory: an entry an agent planted there, a symlink to files
// elsewhere included, is never deleted or followed.
func TestTheTrashDeletesOnlyDestroyedHeads(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	parent := filepath.Dir(h.Info().Root)
	trash := filepath.Join(parent, ".grove-trash")
	require.NoError(t, os.MkdirAll(filepath.Join(trash, "not-a-head"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(trash, "not-a-head", "keep"), []byte("x"), 0o644))
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.MkdirAll(victim, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o644))
	// Named like the live head's trash entry, but a symlink.
	require.NoError(t, os.Symlink(victim, filepath.Join(trash, string(h.Info().ID)+".1")))

	_, err := h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	b := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	require.NoError(t, b.WaitDeletions(f.ctx))
	assert.FileExists(t, filepath.Join(trash, "not-a-head", "keep"))
	assert.FileExists(t, filepath.Join(victim, "keep"))
}
