package gitbackend_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// Attacks from a security review of the confinement work, kept as
// regression tests. Each first shows the attack works for plain git (a
// control, where that applies), then that grove holds. Every one of them
// succeeded against grove when the review was made.

// adminOf returns the head's git dir as its .git file names it.
func adminOf(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".git"))
	require.NoError(t, err)
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(data)), "gitdir:"))
}

// commonOf is the fixture's common git dir.
func commonOf(f *fixture) string { return filepath.Join(f.repo, ".git") }

// appendFile appends raw bytes to a file (as an agent with a shell can to
// the repository's config).
func appendFile(t *testing.T, path, data string) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = fh.WriteString(data)
	require.NoError(t, err)
	require.NoError(t, fh.Close())
}

// filterAttack is the shared shape of the configuration attacks: plant
// writes configuration naming a clean filter driver (named driver) that
// runs script; the head's .gitattributes names it for *.x; a plain git add
// in the head runs it (control); a grove checkpoint must not, and answers
// nothing worse than a typed error.
func filterAttack(t *testing.T, driver string, plant func(f *fixture, h *workspace.Head, script string)) {
	ran, err := filterAttack2(t, driver, plant)
	assert.NotEqual(t, workspace.Internal, workspace.CodeOf(err), "checkpoint: %v", err)
	assert.False(t, ran, "grove's checkpoint ran the agent's filter driver")
}

// TestACommondirRewrittenWithATrailingBlankIsNotBelieved: git strips
// only line ends from a worktree's commondir file, so "../.. " names
// <common>/worktrees/".. ", a fake common dir the agent builds (objects
// and refs symlinked to the real ones) whose config names a driver. grove
// tells git the common dir (GIT_COMMON_DIR) and reads commondir as git
// does, so the head is refused, typed, and nothing runs.
func TestACommondirRewrittenWithATrailingBlankIsNotBelieved(t *testing.T) {
	filterAttack(t, "z", func(f *fixture, h *workspace.Head, script string) {
		admin := adminOf(t, h.Info().Root)
		fake := filepath.Join(commonOf(f), "worktrees", ".. ")
		require.NoError(t, os.MkdirAll(fake, 0o755))
		for _, n := range []string{"objects", "refs", "packed-refs"} {
			require.NoError(t, os.Symlink(filepath.Join("..", "..", n), filepath.Join(fake, n)))
		}
		require.NoError(t, os.WriteFile(filepath.Join(fake, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(fake, "config"), []byte(
			"[core]\n\trepositoryformatversion = 0\n[filter \"z\"]\n\tclean = "+script+"\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(admin, "commondir"), []byte("../.. \n"), 0o644))
	})
}

// TestAnIncludePathWithALoneCRIsFollowedAsGitFollowsIt: git's value
// parser takes a lone CR for a blank, so "evil<CR>.cfg" includes
// "evil .cfg". grove has git parse each configuration file, so it follows
// the same file.
func TestAnIncludePathWithALoneCRIsFollowedAsGitFollowsIt(t *testing.T) {
	filterAttack(t, "y", func(f *fixture, h *workspace.Head, script string) {
		common := commonOf(f)
		require.NoError(t, os.WriteFile(filepath.Join(common, "evil .cfg"), []byte("[filter \"y\"]\n\tclean = "+script+"\n"), 0o644))
		appendFile(t, filepath.Join(common, "config"), "[include]\n\tpath = evil\r.cfg\n")
	})
}

// TestAnIncludePathContinuedAfterAnEscapedBackslashIsFollowed: "a\\\"
// then a new line then "b.cfg" is, for git, the value `a\b.cfg` (an
// escaped backslash, then a continuation).
func TestAnIncludePathContinuedAfterAnEscapedBackslashIsFollowed(t *testing.T) {
	filterAttack(t, "w", func(f *fixture, h *workspace.Head, script string) {
		common := commonOf(f)
		require.NoError(t, os.WriteFile(filepath.Join(common, `a\b.cfg`), []byte("[filter \"w\"]\n\tclean = "+script+"\n"), 0o644))
		appendFile(t, filepath.Join(common, "config"), "[include]\n\tpath = a\\\\\\\nb.cfg\n")
	})
}

// TestASectionHeaderWithACRNamesADriverThatIsOverridden: git accepts a
// CR between a section name and its quoted subsection.
func TestASectionHeaderWithACRNamesADriverThatIsOverridden(t *testing.T) {
	filterAttack(t, "x", func(f *fixture, h *workspace.Head, script string) {
		appendFile(t, filepath.Join(commonOf(f), "config"), "[filter\r\"x\"]\n\tclean = "+script+"\n")
	})
}

// TestADriverNameWithAnEqualsSignIsOverridden: git splits a -c
// parameter at its first '=', so "-c filter.a=b.clean=" would set
// "filter.a"; the overrides go through GIT_CONFIG_KEY_n/VALUE_n instead.
func TestADriverNameWithAnEqualsSignIsOverridden(t *testing.T) {
	filterAttack(t, "a=b", func(f *fixture, h *workspace.Head, script string) {
		appendFile(t, filepath.Join(commonOf(f), "config"), "[filter \"a=b\"]\n\tclean = "+script+"\n")
	})
}

// nestedRepoWithFilter makes a nested repository "sub" in the head at root,
// with one committed file that its .gitattributes sends through filter
// "q" (which the caller defines in sub's configuration), and returns it.
func nestedRepoWithFilter(t *testing.T, f *fixture, root string) string {
	t.Helper()
	sub := filepath.Join(root, "sub")
	f.git(root, "init", "-q", "sub")
	f.git(sub, "config", "user.email", "a@b")
	f.git(sub, "config", "user.name", "a")
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".gitattributes"), []byte("* filter=q\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "a"), []byte("a\n"), 0o644))
	f.git(sub, "add", "-A")
	f.git(sub, "commit", "-qm", "nested")
	return sub
}

// TestStatusNeverRunsGitInANestedRepository: the agent stages a nested
// repository as a gitlink in the head's index (git add sub). git status
// and git diff would run git inside it, with the nested repository's own
// configuration, which grove has not read; grove tells them not to.
func TestStatusNeverRunsGitInANestedRepository(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	sub := nestedRepoWithFilter(t, f, root)
	f.git(sub, "config", "filter.q.clean", script)
	f.git(root, "add", "sub") // a gitlink in the head's index
	old := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	stale := func() { require.NoError(t, os.Chtimes(filepath.Join(sub, "a"), old, old)); old = old.Add(time.Hour) }

	// Control: plain git status in the head runs the nested filter.
	stale()
	_, err := gitUser(f.ctx, root, "status", "--porcelain")
	require.NoError(t, err)
	require.Contains(t, markersIn(t, markers), "pwned", "plain git status does not run it, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))

	stale()
	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, markersIn(t, markers), "grove's status ran a filter named in the nested repository's config")
	stale()
	_, err = h.Diff(f.ctx, "main", workspace.Live)
	require.NoError(t, err)
	assert.Empty(t, markersIn(t, markers), "grove's diff ran a filter named in the nested repository's config")
}

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
	_, err = h.Restore(f.ctx, workspace.Rev(cp.ID), nil)
	require.NoError(t, err)
	for _, n := range names {
		data, err := h.FS().ReadFile(n)
		require.NoError(t, err)
		assert.Equal(t, n+"\n", string(data))
	}
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
}

// TestANULInASubsectionNameBreaksNothing: git reads a NUL byte inside a
// quoted subsection (and no attribute can name that driver); overriding
// it would put a NUL in a process's environment, which no process can
// take. Every operation still works, and a destroy finishes whole.
func TestANULInASubsectionNameBreaksNothing(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	appendFile(t, filepath.Join(commonOf(f), "config"), "[diff \"a\x00b\"]\n\tcommand = x\n")
	// Control: plain git works.
	_, err := gitUser(f.ctx, h.Info().Root, "status", "--porcelain")
	require.NoError(t, err, "plain git refuses the configuration, so grove refusing it would be fair")

	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	f.write(h, "work.txt", "work\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	require.NoError(t, err)
	require.NoError(t, ws.Close())
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
	_, err = h.Restore(ctx, workspace.Rev(base.ID), nil)
	require.NoError(t, err, "restore while the repository lock is held")
	assert.Equal(t, string(base.ID), f.git(h.Info().Root, "rev-parse", "HEAD"))
	assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"))
}

// fifoWedge replaces name in the head's git dir with a FIFO and runs op
// with a 1s context. Reading a FIFO blocks in open(2) until a writer
// comes, where no context reaches. It returns how long op took; the FIFO
// is fed after wait, so that a test of a grove that blocks still ends.
func fifoWedge(t *testing.T, f *fixture, h *workspace.Head, name string, wait time.Duration, op func(ctx context.Context) error) (time.Duration, error) {
	t.Helper()
	p := filepath.Join(adminOf(t, h.Info().Root), name)
	data, _ := os.ReadFile(p)
	require.NoError(t, os.Remove(p))
	mkfifo(t, p)
	ctx, cancel := context.WithTimeout(f.ctx, time.Second)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- op(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(wait):
		// Still blocked long after its context: feed the FIFO.
		w, oerr := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		require.NoError(t, oerr, "nobody is reading the FIFO")
		_, _ = w.Write(data)
		_ = w.Close()
		err = <-done
	}
	took := time.Since(start)
	_ = os.Remove(p)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return took, err
}

// TestAFIFOInTheHeadsGitDirNeverBlocks: the agent replaces a file of its
// own git dir with a FIFO. grove never opens one for reading: the head is
// refused with a typed error, or (for its index) repaired.
func TestAFIFOInTheHeadsGitDirNeverBlocks(t *testing.T) {
	for _, name := range []string{"grove-head-id", "commondir", "index", "gitdir", "HEAD"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			f.write(h, "work.txt", "work\n")
			took, err := fifoWedge(t, f, h, name, 4*time.Second, func(ctx context.Context) error {
				_, err := h.Checkpoint(ctx, nil)
				return err
			})
			assert.Less(t, took, 3*time.Second, "the checkpoint blocked past its context")
			assert.NotContains(t, []workspace.Code{workspace.Internal, workspace.Canceled}, workspace.CodeOf(err), "checkpoint: %v", err)
		})
	}
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
	assert.NotEqual(t, workspace.Internal, workspace.CodeOf(err), "%v", err)
	data, err = os.ReadFile(filepath.Join(victim, "untracked.txt"))
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(data))
}
