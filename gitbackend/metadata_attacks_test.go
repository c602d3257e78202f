package gitbackend_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attacks on grove's own records in the common git dir (manifests,
// registrations, lock files), which an agent without a sandbox can write.

// TestASymlinkAmongTheRegistrationsIsNeverFollowed: the agent puts a
// symlink <common>/worktrees/evil -> /victim. git worktree prune finds no
// gitdir file there and deletes the entry recursively, through the
// symlink. grove removes only registrations it made, and clears symlinks
// there before it ever prunes.
func TestASymlinkAmongTheRegistrationsIsNeverFollowed(t *testing.T) {
	mkVictim := func() (string, func() []string) {
		v := filepath.Join(t.TempDir(), "victim")
		require.NoError(t, os.MkdirAll(filepath.Join(v, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(v, "precious.txt"), []byte("precious\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(v, "sub", "b.txt"), []byte("b\n"), 0o644))
		return v, func() []string { return markersIn(t, v) }
	}
	// Control: plain git worktree prune in a throwaway repository.
	f0 := newFixture(t)
	v0, left0 := mkVictim()
	require.NoError(t, os.MkdirAll(filepath.Join(commonOf(f0), "worktrees"), 0o755))
	require.NoError(t, os.Symlink(v0, filepath.Join(commonOf(f0), "worktrees", "evil")))
	_, _ = gitUser(f0.ctx, f0.repo, "worktree", "prune")
	require.Empty(t, left0(), "plain git worktree prune does not delete through the symlink, so this test could not fail")

	f := newFixture(t)
	h := f.head("agent")
	victim, left := mkVictim()
	require.NoError(t, os.Symlink(victim, filepath.Join(commonOf(f), "worktrees", "evil")))
	_, err := h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	h2 := f.head("second") // a create that fails half-way would prune
	_, err = h2.Destroy(f.ctx, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"precious.txt", "sub"}, left(), "grove deleted the files of a directory outside the repository")
}

// TestNamesOtherFileSystemsTakeForDotGitAreCaptured: ".git.", ".git "
// and "git~1" are what NTFS makes of .git; git add refuses them by
// default, which failed every checkpoint (and a destroy without Discard)
// while one existed. On this file system they are the agent's files, and
// are captured and restored like any other.
func TestNamesOtherFileSystemsTakeForDotGitAreCaptured(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	names := []string{".git.", ".git ", "git~1", "sub/.git.."}
	require.NoError(t, h.FS().MkdirAll("sub", 0o755))
	for _, n := range names {
		require.NoError(t, h.FS().WriteFile(n, []byte(n+"\n"), 0o644), "the FS refuses %q", n)
	}
	// Control: plain git add -A fails on them.
	_, err := gitUser(f.ctx, root, "add", "-A")
	require.Error(t, err, "plain git accepts the names, so this test could not fail")

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	files := f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID))
	for _, n := range names {
		assert.Contains(t, files, n)
	}
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
	require.NoError(t, err)
	for _, n := range names {
		data, err := h.FS().ReadFile(n)
		require.NoError(t, err)
		assert.Equal(t, n+"\n", string(data))
	}
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
}

// TestALockFileReplacedByADirectoryIsRepaired: the agent (write access
// to the common dir) replaces grove's repository lock file with a
// directory; the lock file is made again in its place.
func TestALockFileReplacedByADirectoryIsRepaired(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	lockPath := filepath.Join(commonOf(f), "grove", "locks", "repo.lock")
	_ = os.Remove(lockPath)
	require.NoError(t, os.MkdirAll(filepath.Join(lockPath, "x"), 0o755))
	f.write(h, "work.txt", "work\n")
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	o, err := f.ws.NewHead("other").From("main").Create(f.ctx)
	require.NoError(t, err)
	require.NoError(t, o.Close())
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	fi, err := os.Lstat(lockPath)
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "the lock's path holds a lock file again, not the agent's directory: %v", fi.Mode())
	assert.NoDirExists(t, filepath.Join(lockPath, "x"))
}

// TestAForgedManifestNeverLeadsGroveOutOfTheRepository: an agent that can
// write grove's metadata rewrites its head's manifest as an attached head
// over another repository's checkout. grove refuses it: a manifest's git
// dir must be this repository's.
func TestAForgedManifestNeverLeadsGroveOutOfTheRepository(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	b := h.Binding()
	require.NoError(t, h.Close())
	victim := filepath.Join(t.TempDir(), "victim")
	f.git(t.TempDir(), "init", "-q", victim)
	require.NoError(t, os.WriteFile(filepath.Join(victim, "untracked.txt"), []byte("precious\n"), 0o644))
	mfPath := filepath.Join(commonOf(f), "grove", "heads", string(b.Head)+".json")
	data, err := os.ReadFile(mfPath)
	require.NoError(t, err)
	var mf map[string]any
	require.NoError(t, json.Unmarshal(data, &mf))
	mf["dir"], mf["admin"], mf["attached"] = victim, filepath.Join(victim, ".git"), true
	forged, err := json.Marshal(mf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mfPath, forged, 0o644))

	_, err = f.ws.OpenHead(f.ctx, "agent", nil)
	require.Error(t, err)
	assert.NotEqual(t, grove.Internal, grove.CodeOf(err), "%v", err)
	data, err = os.ReadFile(filepath.Join(victim, "untracked.txt"))
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(data))
}

// plantRaw writes a manifest as an agent can, with extra JSON fields.
func plantRaw(t *testing.T, f *fixture, id, name, branch, dir, admin, extra string) {
	t.Helper()
	mf := fmt.Sprintf(`{"version":1,"id":%q,"name":%q,"access":"isolated","branch":%q,"dir":%q,"admin":%q,"base":"","state":"active",%s"created":"2026-01-01T00:00:00Z"}`,
		id, name, branch, dir, admin, extra)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".git", "grove", "heads", id+".json"), []byte(mf), 0o644))
}

// A planted manifest whose directory lies in the heads directory only by
// its name, through a symlink in the agent's head: no recreate there, no
// .git file planted in the user's directory it leads to.
func TestAttackRepairsThroughASymlinkInAHead(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "evil.desktop", "[Desktop Entry]\nExec=sh -c pwned\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.git(f.repo, "branch", "evil", string(cp.ID))
	outside := t.TempDir()
	project := filepath.Join(outside, "project")
	require.NoError(t, os.MkdirAll(project, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "secret.txt"), []byte("the user's\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(h.Info().Root, "esc")))
	plantManifest(t, f, "autostart", "evil", filepath.Join(h.Info().Root, "esc", "autostart"))
	plantRaw(t, f, "00000000-0000-4000-8000-0000000000cc", "project", "evil", filepath.Join(h.Info().Root, "esc", "project"),
		filepath.Join(f.repo, ".git", "worktrees", "project"), "")

	_, err = f.ws.OpenHead(f.ctx, "autostart", &workspace.ReopenOptions{Recreate: true})
	require.Error(t, err)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	assert.NoDirExists(t, filepath.Join(outside, "autostart"), "the agent's branch is not checked out outside the heads")
	assert.NoFileExists(t, filepath.Join(project, ".git"), "no .git file is planted in the user's directory")
	assert.FileExists(t, filepath.Join(project, "secret.txt"))
}

// A planted "rebuilding" manifest naming another head's directory does
// not make a repair delete that head's uncaptured work.
func TestAttackARebuildingManifestDoesNotDeleteAnotherHead(t *testing.T) {
	f := newFixture(t)
	victim := f.head("victim")
	f.write(victim, "uncaptured.txt", "victim's unsaved work\n")
	require.NoError(t, victim.Close())
	f.head("agent")
	f.git(f.repo, "branch", "evil", "main")
	plantRaw(t, f, "00000000-0000-4000-8000-0000000000aa", "x", "evil", victim.Info().Root,
		filepath.Join(f.repo, ".git", "worktrees", "nonexistent"), `"rebuilding":true,`)
	_, err := f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(victim.Info().Root, "uncaptured.txt"))
}

// A planted "creating" manifest is recovered at every open of the
// workspace: it must not delete a directory it names — the user's own
// worktree outside the heads, or another head inside them.
func TestAttackACreatingManifestDeletesNothingItCannotProveItMade(t *testing.T) {
	f := newFixture(t)
	victim := f.head("victim")
	f.write(victim, "uncaptured.txt", "victim's unsaved work\n")
	require.NoError(t, victim.Close())
	userWT := filepath.Join(t.TempDir(), "hotfix")
	f.git(f.repo, "worktree", "add", "-q", "-b", "hotfix", userWT, "main")
	require.NoError(t, os.WriteFile(filepath.Join(userWT, "notes.txt"), []byte("user's uncommitted\n"), 0o644))
	plantRaw(t, f, "00000000-0000-4000-8000-0000000000bb", "y", "", userWT,
		filepath.Join(f.repo, ".git", "worktrees", "nonexistent"), `"creating":true,`)
	plantRaw(t, f, "00000000-0000-4000-8000-0000000000bc", "z", "", victim.Info().Root,
		filepath.Join(f.repo, ".git", "worktrees", "nonexistent"), `"creating":true,`)
	_ = f.open()
	_, err := f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(userWT, "notes.txt"))
	assert.FileExists(t, filepath.Join(victim.Info().Root, "uncaptured.txt"))
	assert.Contains(t, f.git(f.repo, "worktree", "list"), userWT, "the user's worktree stays registered")
}
