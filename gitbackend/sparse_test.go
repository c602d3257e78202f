package gitbackend_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// sparseFixture is a repository with a file in and out of a sparse set
// and a head sparse on src.
func sparseFixture(t *testing.T) (*fixture, *workspace.Head) {
	t.Helper()
	f := newFixture(t)
	require.NoError(t, os.MkdirAll(filepath.Join(f.repo, "docs", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "docs", "deep", "guide.md"), []byte("guide\n"), 0o644))
	f.git(f.repo, "add", "-A")
	f.git(f.repo, "commit", "-qm", "docs")
	h, err := f.ws.NewHead("sparse").From("main").Sparse("src").Create(f.ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return f, h
}

// onDisk lists the files under root, .git aside (see diskFiles).
func onDisk(t *testing.T, root string) []string {
	t.Helper()
	return slices.Collect(maps.Keys(diskFiles(t, root)))
}

// A sparse head holds its set alone, and the user's own git sees it clean
// after a create and after a restore.
func TestASparseHeadIsCleanToTheUsersGit(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go"}, onDisk(t, root))
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	f.write(h, "src/new.go", "package main // new\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "guide\n", f.git(f.repo, "show", string(cp.ID)+":docs/deep/guide.md")+"\n")
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go"}, onDisk(t, root))
}

// The agent's own sparse configuration — its worktree's sparse-checkout
// file rewritten, replaced by a link or a FIFO, core.sparseCheckout and
// extensions.worktreeConfig turned on — never changes what grove
// materialises or captures: the set is grove's record.
func TestAttackTheAgentsSparseConfigurationChangesNothing(t *testing.T) {
	t.Parallel()
	// Each plant goes where git would read a sparse-checkout file for a
	// command grove runs: the head's git dir, and the scratch git dir of
	// its restores.
	plantFile := func(t *testing.T, admin string, put func(p string)) {
		for _, dir := range []string{admin, filepath.Join(admin, "grove-reset")} {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "info"), 0o755))
			p := filepath.Join(dir, "info", "sparse-checkout")
			require.NoError(t, os.RemoveAll(p))
			put(p)
		}
	}
	write := func(t *testing.T, content string) func(string) {
		return func(p string) { require.NoError(t, os.WriteFile(p, []byte(content), 0o644)) }
	}
	for name, plant := range map[string]func(t *testing.T, f *fixture, admin string){
		"everything": func(t *testing.T, f *fixture, admin string) { plantFile(t, admin, write(t, "/*\n")) },
		"nothing":    func(t *testing.T, f *fixture, admin string) { plantFile(t, admin, write(t, "!/*\n")) },
		"link": func(t *testing.T, f *fixture, admin string) {
			outside := filepath.Join(t.TempDir(), "mine")
			require.NoError(t, os.WriteFile(outside, []byte("/*\n"), 0o644))
			plantFile(t, admin, func(p string) { require.NoError(t, os.Symlink(outside, p)) })
			t.Cleanup(func() {
				data, _ := os.ReadFile(outside)
				assert.Equal(t, "/*\n", string(data), "grove wrote through the agent's link")
			})
		},
		"fifo": func(t *testing.T, f *fixture, admin string) { plantFile(t, admin, func(p string) { mkfifo(t, p) }) },
		"config": func(t *testing.T, f *fixture, admin string) {
			appendFile(t, filepath.Join(commonOf(f), "config"), "[extensions]\n\tworktreeConfig = true\n")
			appendFile(t, filepath.Join(admin, "config.worktree"), "[core]\n\tsparseCheckout = true\n\tsparseCheckoutCone = false\n")
			plantFile(t, admin, write(t, "/README.md\n"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, h := sparseFixture(t)
			root := h.Info().Root
			admin := adminOf(t, root)
			f.write(h, "src/edit.go", "package main // edit\n")
			plant(t, f, admin)
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			// The checkpoint is the whole tree: nothing outside the set
			// was dropped, the edit is in.
			for p, want := range map[string]string{"docs/deep/guide.md": "guide\n", "bin/run.sh": "#!/bin/sh\n", "src/edit.go": "package main // edit\n"} {
				got, err := gitUser(f.ctx, f.repo, "show", string(cp.ID)+":"+p)
				require.NoError(t, err, p)
				assert.Equal(t, want, got+"\n", p)
			}
			_, err = h.Restore(f.ctx, "main", nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go"}, onDisk(t, root), "what the restore materialised")
			_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go", "src/edit.go"}, onDisk(t, root), "what the restore materialised")
			again, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.False(t, again.New, "a checkpoint right after the restore made a new one")
		})
	}
}

// What the agent writes outside the set, or hides behind a skip-worktree
// mark of its own, is captured, never lost.
func TestAttackWorkHiddenBehindSkipWorktreeIsCaptured(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	f.write(h, "docs/deep/guide.md", "rewritten outside the set\n")
	f.write(h, "src/main.go", "package main // hidden\n")
	f.git(root, "update-index", "--skip-worktree", "src/main.go")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, cp.New, "status %+v", st)
	for p, want := range map[string]string{"docs/deep/guide.md": "rewritten outside the set\n", "src/main.go": "package main // hidden\n", "bin/run.sh": "#!/bin/sh\n"} {
		got, err := gitUser(f.ctx, f.repo, "show", string(cp.ID)+":"+p)
		require.NoError(t, err, p)
		assert.Equal(t, want, got+"\n", p)
	}
}

// Sparse heads are refused under a sandbox, for now, with a typed error.
func TestASparseHeadUnderASandboxIsUnimplemented(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, &workspace.OpenOptions{Sandbox: &grove.Sandbox{Kind: grove.SandboxBwrap}})
	require.NoError(t, err)
	defer ws.Close()
	_, err = ws.NewHead("s").From("main").Sparse("src").Create(f.ctx)
	require.Equal(t, grove.Unimplemented, grove.CodeOf(err), "%v", err)
	assert.True(t, strings.Contains(err.Error(), "sandbox"), "%v", err)
}

// A sparse head rebuilt by Recreate holds its set alone, and its next
// checkpoint finds nothing changed: nothing outside the set was taken for
// deleted.
func TestRecreateRebuildsASparseHeadSparse(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"rm -rf", "rm -rf then git worktree prune"} {
		t.Run(how, func(t *testing.T) {
			f, h := sparseFixture(t)
			f.write(h, "src/work.go", "package main // work\n")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			info, bind := h.Info(), h.Binding()
			require.NoError(t, h.Close())
			require.NoError(t, os.RemoveAll(info.Root))
			if how != "rm -rf" {
				f.git(f.repo, "worktree", "prune")
			}
			r, err := workspace.Reopen(f.ctx, f.ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true})
			require.NoError(t, err)
			defer r.Close()
			assert.Equal(t, []string{"src"}, r.Info().Sparse)
			assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go", "src/work.go"}, onDisk(t, info.Root))
			assert.Empty(t, f.git(info.Root, "status", "--porcelain"))
			again, err := r.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.False(t, again.New, "the first checkpoint of the rebuilt head made %s over %s", again.ID, cp.ID)
		})
	}
}

// showsAt reports whether commit cp holds path p.
func showsAt(f *fixture, cp grove.CheckpointID, p string) bool {
	_, err := gitUser(f.ctx, f.repo, "cat-file", "-e", string(cp)+":"+p)
	return err == nil
}

// A deletion is a deletion where the agent could see the file: in the
// set, whatever mark it set first, and outside it for a file it wrote
// there itself. Clearing every mark of its index (git read-tree HEAD)
// deletes nothing.
func TestASparseHeadRecordsTheAgentsDeletionsAndNoOthers(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	f.write(h, "docs/tmp.txt", "mine, outside the set\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, showsAt(f, cp.ID, "docs/tmp.txt"))

	f.git(root, "update-index", "--skip-worktree", "src/main.go")
	require.NoError(t, os.Remove(filepath.Join(root, "src", "main.go")))
	require.NoError(t, os.Remove(filepath.Join(root, "docs", "tmp.txt")))
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, showsAt(f, cp.ID, "src/main.go"), "a deletion in the set hidden behind a mark")
	assert.False(t, showsAt(f, cp.ID, "docs/tmp.txt"), "the agent's own file outside the set, deleted")
	assert.True(t, showsAt(f, cp.ID, "docs/deep/guide.md"))

	f.git(root, "read-tree", "HEAD")
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, cp.New, "clearing the index's marks made a checkpoint")
	for _, p := range []string{"docs/deep/guide.md", "bin/run.sh"} {
		assert.True(t, showsAt(f, cp.ID, p), p)
	}
}

// A file or a link where a sparse head keeps a directory outside its set
// is skipped, never captured over that directory; Destroy without Discard
// refuses to lose it.
func TestAttackAFileInTheWayOfADirectoryOutsideTheSet(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"file", "link"} {
		t.Run(kind, func(t *testing.T) {
			f, h := sparseFixture(t)
			root := h.Info().Root
			if kind == "file" {
				f.write(h, "docs", "a file where docs/ is\n")
			} else {
				require.NoError(t, os.Symlink("src", filepath.Join(root, "docs")))
			}
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.True(t, showsAt(f, cp.ID, "docs/deep/guide.md"), "the directory outside the set was dropped")
			assert.Contains(t, cp.Skipped, grove.Skipped{Path: "docs", Reason: grove.SkipSparseConflict})
			_, err = h.Destroy(f.ctx, nil)
			require.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
			_, err = os.Lstat(filepath.Join(root, "docs"))
			assert.NoError(t, err, "the refused destroy removed the file")
		})
	}
}

// An agent swapping FIFOs in where a sparse-checkout file could be read —
// its head's git dir, its restores' scratch git dir — while restores run
// hangs nothing: grove's set is read from a git dir out of its reach.
func TestAttackFIFOsSwappedInDuringRestoresHangNothing(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	admin := adminOf(t, root)
	f.write(h, "src/edit.go", "package main // edit\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, dir := range []string{admin, filepath.Join(admin, "grove-reset")} {
				p := filepath.Join(dir, "info", "sparse-checkout")
				_ = os.MkdirAll(filepath.Dir(p), 0o755)
				_ = os.Remove(p)
				mkfifoQuiet(p)
			}
			time.Sleep(200 * time.Microsecond) // racing, not spinning a core away
		}
	}()
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	for i := range 6 {
		to := grove.Rev("main")
		if i%2 == 1 {
			to = grove.Rev(cp.ID)
		}
		_, err := h.Restore(ctx, to, nil)
		require.NoError(t, err, "restore %d", i)
	}
	close(stop)
	<-done
	assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go", "src/edit.go"}, onDisk(t, root))
}

// Status says what the next checkpoint would take: an edit outside the set
// (behind its mark) is a change, marks the agent cleared are not, and a
// file in the way of a directory outside the set is not either.
func TestSparseStatusAgreesWithTheCheckpoint(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	f.git(root, "read-tree", "HEAD") // every mark cleared
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	f.write(h, "docs", "in the way\n")
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	require.NoError(t, os.Remove(filepath.Join(root, "docs")))
	f.write(h, "docs/deep/guide.md", "edited outside the set\n")
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.True(t, st.Dirty)
	assert.Equal(t, []grove.Change{{Path: "docs/deep/guide.md", Kind: grove.ChangeModified}}, st.Changes)
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.True(t, cp.New)
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
}

// SetSparse widens, narrows and drops a head's set in place, never losing
// a change, and the set it leaves is the one a new process reopens.
func TestSetSparseChangesTheSetInPlace(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	config := f.git(f.repo, "config", "--list", "--local")
	clean := func(what string) {
		t.Helper()
		assert.Empty(t, f.git(root, "status", "--porcelain"), what)
		cp, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		assert.False(t, cp.New, "%s: a checkpoint found a change", what)
	}
	require.NoError(t, h.SetSparse(f.ctx, "docs/", "src"))
	assert.Equal(t, []string{"docs", "src"}, h.Info().Sparse)
	assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go", "docs/deep/guide.md"}, onDisk(t, root))
	clean("widened")

	f.write(h, "src/main.go", "package main // changed\n")
	require.NoError(t, h.SetSparse(f.ctx, "docs"))
	assert.ElementsMatch(t, []string{".gitignore", "README.md", "src/main.go", "docs/deep/guide.md"}, onDisk(t, root), "a changed file left the disk")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	got, err := gitUser(f.ctx, f.repo, "show", string(cp.ID)+":src/main.go")
	require.NoError(t, err)
	assert.Equal(t, "package main // changed", got)
	// Captured: the agent may delete it, and the deletion outlives a
	// change of the set.
	require.NoError(t, os.Remove(filepath.Join(root, "src", "main.go")))
	require.NoError(t, h.SetSparse(f.ctx, "docs"))
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, showsAt(f, cp.ID, "src/main.go"), "the agent's deletion was lost")
	clean("narrowed")

	require.NoError(t, h.SetSparse(f.ctx, "."))
	assert.Nil(t, h.Info().Sparse)
	assert.ElementsMatch(t, []string{".gitignore", "README.md", "bin/run.sh", "docs/deep/guide.md"}, onDisk(t, root))
	clean("the whole tree")

	require.NoError(t, h.SetSparse(f.ctx, "src"))
	assert.ElementsMatch(t, []string{".gitignore", "README.md"}, onDisk(t, root))
	clean("sparse again")
	assert.Equal(t, config, f.git(f.repo, "config", "--list", "--local"), "the repository's configuration changed")

	bind := h.Binding()
	require.NoError(t, h.Close())
	r, err := workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{}), bind, nil)
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, []string{"src"}, r.Info().Sparse)
	require.Equal(t, grove.InvalidArgument, grove.CodeOf(r.SetSparse(f.ctx, "../x")))
}

// What a set change must not lose (the second hostile review): a deletion
// in a whole head made sparse, an ignored file in a directory leaving the
// set, an edit checkpointed in a directory that a narrowing then leaves.
func TestSetSparseLosesNothing(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	require.NoError(t, h.SetSparse(f.ctx, ".")) // the whole tree
	require.NoError(t, os.Remove(filepath.Join(root, "bin", "run.sh")))
	require.NoError(t, h.SetSparse(f.ctx, "src"))
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.False(t, showsAt(f, cp.ID, "bin/run.sh"), "a deletion made in the whole head was lost")

	require.NoError(t, h.SetSparse(f.ctx, "src", "docs"))
	f.write(h, "docs/deep/guide.md", "edited\n")
	f.write(h, "docs/deep/secret.log", "ignored, in no checkpoint\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	err = h.SetSparse(f.ctx, "src")
	require.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "docs/deep/secret.log")
	assert.FileExists(t, filepath.Join(root, "docs", "deep", "secret.log"))
	require.NoError(t, os.Remove(filepath.Join(root, "docs", "deep", "secret.log")))
	require.NoError(t, h.SetSparse(f.ctx, "src"))
	f.git(root, "read-tree", "HEAD") // every mark cleared
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	got, err := gitUser(f.ctx, f.repo, "show", string(cp.ID)+":docs/deep/guide.md")
	require.NoError(t, err, "the edit checkpointed before the narrowing was dropped")
	assert.Equal(t, "edited", got)
}

// A land onto a branch checked out in a sparse checkout is refused even
// when the user's set covers every file the tree has now.
func TestALandIntoASparseCheckoutWithNoMarksIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.git(f.repo, "sparse-checkout", "set", "src", "bin")
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("a").From("main").Sparse().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	f.write(h, "other/x.txt", "outside the user's set\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Land(f.ctx, &workspace.LandOptions{Onto: "main"})
	require.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.NoFileExists(t, filepath.Join(f.repo, "other", "x.txt"))
}

// A change staged with git add and never checkpointed lives in the index
// alone once git removes its file: a set change that would is refused.
func TestSetSparseKeepsStagedChangesOnDisk(t *testing.T) {
	t.Parallel()
	f, h := sparseFixture(t)
	root := h.Info().Root
	require.NoError(t, h.SetSparse(f.ctx, "src", "docs"))
	f.write(h, "docs/deep/guide.md", "staged, not checkpointed\n")
	f.git(root, "add", "docs/deep/guide.md")
	err := h.SetSparse(f.ctx, "src")
	require.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "docs/deep/guide.md")
	data, err := os.ReadFile(filepath.Join(root, "docs", "deep", "guide.md"))
	require.NoError(t, err)
	assert.Equal(t, "staged, not checkpointed\n", string(data))
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, h.SetSparse(f.ctx, "src"), "once checkpointed, the change can leave the disk")
}
