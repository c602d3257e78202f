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

// Attacks on restore and materialize: files ignored before a restore, the
// restore's own records and scratch files, the repository lock.

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
	_, err = h.Restore(f.ctx, grove.Rev(old.ID), nil)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "notes.txt"))
	require.NoError(t, err, "the restore deleted an ignored file no checkpoint holds")
	assert.Equal(t, "unsaved notes\n", string(data))
}

// TestANegationInTheTargetsGitignoreNeverDeletesAFileIgnoredBefore: restore
// keeps what is ignored now by naming it in core.excludesFile for git
// clean. But git reads the tree's .gitignore files before the excludes
// file, and the first group with a match wins: a target whose .gitignore
// un-ignores the path ("!local.log") makes git clean delete the file,
// which was ignored before the restore and is in no checkpoint.
func TestANegationInTheTargetsGitignoreNeverDeletesAFileIgnoredBefore(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.write(h, ".gitignore", "ignored/\n*.log\n!local.log\n")
	target, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, "main", nil) // back to "*.log" ignoring every log
	require.NoError(t, err)
	f.write(h, "local.log", "precious, ignored, in no checkpoint\n")
	out, err := gitUser(f.ctx, root, "check-ignore", "local.log")
	require.NoError(t, err, "local.log is ignored before the restore")
	require.Equal(t, "local.log", out)

	_, err = h.Restore(f.ctx, grove.Rev(target.Checkpoint.ID), nil)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "local.log"))
	require.NoError(t, err, "the restore deleted a file that was ignored before it")
	assert.Equal(t, "precious, ignored, in no checkpoint\n", string(data))
}

// TestMaterializeNeverDeletesThroughADirectorySwappedForASymlink: an
// agent that can write the parent of a Materialize destination swaps it
// for a symlink to another directory while Materialize runs. When the
// write fails, the undo used to list the destination through the symlink
// and remove that directory's files; it now empties only the directory
// it opened, never following a symlink. (That git itself can be led to
// write through such a swap is in the package doc: a destination must not
// lie in a directory an agent can write.)
func TestMaterializeNeverDeletesThroughADirectorySwappedForASymlink(t *testing.T) {
	f := newFixture(t)
	base := t.TempDir() // the agent can write here
	dir := filepath.Join(base, "out")
	victim := filepath.Join(t.TempDir(), "victim")
	victimFile := filepath.Join(victim, "README.md")
	precious := filepath.Join(victim, "precious.txt") // in no tree

	for attempt := 0; attempt < 40; attempt++ {
		_ = os.RemoveAll(dir)
		_ = os.RemoveAll(dir + ".real")
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.MkdirAll(victim, 0o755))
		require.NoError(t, os.WriteFile(victimFile, []byte("the orchestrator's own file\n"), 0o644))
		require.NoError(t, os.WriteFile(precious, []byte("precious\n"), 0o644))
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // the agent
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if os.Rename(dir, dir+".real") == nil {
					_ = os.Symlink(victim, dir)
					time.Sleep(200 * time.Microsecond)
					_ = os.Remove(dir)
					_ = os.Rename(dir+".real", dir)
				}
				time.Sleep(200 * time.Microsecond)
			}
		}()
		err := f.ws.Materialize(f.ctx, "main", dir)
		close(stop)
		<-done
		_, serr := os.Stat(precious)
		require.NoError(t, serr, "attempt %d: materialize's undo deleted a file of the directory the symlink led to (materialize: %v)", attempt+1, err)
	}
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
	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
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
	t.Parallel() // mostly waiting on git, helper processes or a clock
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

			_, err = h.Restore(f.ctx, grove.Rev(target.ID), &workspace.RestoreOptions{Discard: true})
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

			_, err := h.Restore(f.ctx, grove.Rev(target.ID), &workspace.RestoreOptions{Discard: true})
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
func restoreFixture(t *testing.T) (*fixture, *workspace.Head, grove.CheckpointResult) {
	t.Helper()
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "a.txt", "target\n")
	target, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "a.txt", "later\n")
	return f, h, target
}

// TestARestoreNeverWaitsOnTheRepositoryLockAfterWriting: the agent flocks
// grove's repository lock file. A restore has nothing to wait for once it
// has written the files (moving the head's own branch is one ref update,
// atomic by git's own ref lock): it finishes.
func TestARestoreNeverWaitsOnTheRepositoryLockAfterWriting(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	base, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "work.txt", "work\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)

	defer holdLock(t, filepath.Join(commonOf(f), "grove", "locks", "repo.lock"))()

	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	_, err = h.Restore(ctx, grove.Rev(base.ID), nil)
	require.NoError(t, err, "restore while the repository lock is held")
	assert.Equal(t, string(base.ID), f.git(h.Info().Root, "rev-parse", "HEAD"))
	assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"))
}
