package gitbackend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/workspace"
)

// Attacks on the lifecycle (recreate, reconcile, destroy's trash, the
// record of restore targets) from a review of that work, kept as
// regression tests. Each succeeded when the review was made. The agent can
// write its head and the common git dir (grove's manifests included), and
// put symlinks in its head, which lies in the heads directory.

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

// The record of restore targets is replaced, never written through: a
// symlink there does not carry the write out of the metadata.
func TestAttackTheRestoreRecordIsNotWrittenThrough(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "a.txt", "1\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	victim := filepath.Join(t.TempDir(), "bashrc")
	require.NoError(t, os.WriteFile(victim, []byte("export PATH=/usr/bin\n"), 0o644))
	restores := filepath.Join(f.repo, ".git", "grove", "heads", string(h.Info().ID)+".restores")
	require.NoError(t, os.Symlink(victim, restores))
	_, err = h.Restore(f.ctx, workspace.Rev(cp.ID), nil)
	require.NoError(t, err)
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "export PATH=/usr/bin\n", string(data))

	// A record that cannot be read keeps all of that head's checkpoints.
	require.NoError(t, os.Remove(restores))
	require.NoError(t, os.Mkdir(restores, 0o755))
	rep, err := f.ws.Retain(f.ctx, &workspace.RetentionPolicy{KeepLast: 1})
	require.NoError(t, err)
	require.Len(t, rep.Heads, 1)
	assert.Empty(t, rep.Heads[0].Deleted)
}

// A restore resets the files in a scratch git dir of grove's in the
// head's git dir, kept from one restore to the next: what an agent planted
// there — a link to a directory outside, a git dir whose HEAD names main,
// a HEAD that is a symlink or a hard link to a file outside, a commondir
// naming another repository, a stale HEAD.lock, a HEAD naming a commit
// that does not exist — is removed or replaced (or, for the last, harmless),
// never written through or believed, and no branch but the head's own
// moves.
func TestAttackTheRestoresScratchGitDirIsMadeNew(t *testing.T) {
	for _, planted := range []string{"link", "dir", "head-symlink", "head-hardlink", "head-no-commit", "commondir", "lock"} {
		t.Run(planted, func(t *testing.T) {
			f, h, target := restoreFixture(t)
			_, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			mainAt := f.git(f.repo, "rev-parse", "main")

			outside := t.TempDir()
			head := "ref: refs/heads/main\n"
			require.NoError(t, os.WriteFile(filepath.Join(outside, "HEAD"), []byte(head), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(outside, "commondir"), []byte(commonOf(f)+"\n"), 0o644))
			scratch := filepath.Join(adminOf(t, h.Info().Root), "grove-reset")
			if planted != "link" {
				// A restore made the scratch dir: the agent finds it there.
				_, err = h.Restore(f.ctx, "HEAD", &workspace.RestoreOptions{Discard: true})
				require.NoError(t, err)
				require.DirExists(t, scratch)
			}
			switch planted {
			case "link":
				require.NoError(t, os.Symlink(outside, scratch))
			case "dir":
				require.NoError(t, os.WriteFile(filepath.Join(scratch, "HEAD"), []byte(head), 0o644))
			case "head-symlink":
				require.NoError(t, os.Remove(filepath.Join(scratch, "HEAD")))
				require.NoError(t, os.Symlink(filepath.Join(outside, "HEAD"), filepath.Join(scratch, "HEAD")))
			case "head-hardlink":
				require.NoError(t, os.Remove(filepath.Join(scratch, "HEAD")))
				require.NoError(t, os.Link(filepath.Join(outside, "HEAD"), filepath.Join(scratch, "HEAD")))
			case "commondir":
				other := filepath.Join(t.TempDir(), "other")
				f.git(t.TempDir(), "init", "-q", other)
				require.NoError(t, os.WriteFile(filepath.Join(scratch, "commondir"), []byte(filepath.Join(other, ".git")+"\n"), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(scratch, "HEAD"), []byte(head), 0o644))
			case "head-no-commit": // detached, kept: git reset does without it
				require.NoError(t, os.WriteFile(filepath.Join(scratch, "HEAD"), []byte(strings.Repeat("d", 40)+"\n"), 0o644))
			case "lock":
				require.NoError(t, os.WriteFile(filepath.Join(scratch, "HEAD.lock"), []byte(head), 0o644))
			}

			_, err = h.Restore(f.ctx, workspace.Rev(target.ID), &workspace.RestoreOptions{Discard: true})
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(h.Info().Root, "a.txt"))
			require.NoError(t, err)
			assert.Equal(t, "target\n", string(data))
			assert.Equal(t, mainAt, f.git(f.repo, "rev-parse", "main"), "main moved")
			assert.Equal(t, string(target.ID), f.git(h.Info().Root, "rev-parse", "HEAD"))
			entries, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Len(t, entries, 2, "something was written outside")
			data, err = os.ReadFile(filepath.Join(outside, "HEAD"))
			require.NoError(t, err)
			assert.Equal(t, head, string(data))
			fi, err := os.Lstat(scratch)
			require.NoError(t, err)
			assert.True(t, fi.IsDir(), "the scratch git dir is %v", fi.Mode())
			data, err = os.ReadFile(filepath.Join(scratch, "HEAD"))
			require.NoError(t, err)
			assert.Equal(t, string(target.ID)+"\n", string(data), "the scratch HEAD is not the target, detached")
		})
	}
}

// Whatever the agent puts where a restore links the index its git clean
// reads (a directory with a file in it, a symlink to a file outside) is
// removed, never followed, and the restore goes on.
func TestAttackTheCleanIndexNameIsTakenBack(t *testing.T) {
	for _, planted := range []string{"dir", "symlink"} {
		t.Run(planted, func(t *testing.T) {
			f, h, target := restoreFixture(t)
			f.write(h, "junk.txt", "junk\n")
			outside := filepath.Join(t.TempDir(), "precious")
			require.NoError(t, os.WriteFile(outside, []byte("precious\n"), 0o644))
			name := filepath.Join(adminOf(t, h.Info().Root), "grove-clean-index")
			if planted == "dir" {
				require.NoError(t, os.MkdirAll(filepath.Join(name, "sub"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(name, "sub", "f"), []byte("x"), 0o644))
			} else {
				require.NoError(t, os.Symlink(outside, name))
			}

			_, err := h.Restore(f.ctx, workspace.Rev(target.ID), &workspace.RestoreOptions{Discard: true})
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(h.Info().Root, "a.txt"))
			require.NoError(t, err)
			assert.Equal(t, "target\n", string(data))
			assert.NoFileExists(t, filepath.Join(h.Info().Root, "junk.txt"), "the clean did not run")
			assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"))
			data, err = os.ReadFile(outside)
			require.NoError(t, err)
			assert.Equal(t, "precious\n", string(data))
			_, err = os.Lstat(name)
			assert.ErrorIs(t, err, os.ErrNotExist, "the link is left behind")
		})
	}
}

// restoreFixture makes a head whose a.txt says "target" in checkpoint
// target and "later" in its files.
func restoreFixture(t *testing.T) (*fixture, *workspace.Head, workspace.CheckpointResult) {
	t.Helper()
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "a.txt", "target\n")
	target, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "a.txt", "later\n")
	return f, h, target
}
