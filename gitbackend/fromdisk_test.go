//go:build linux

package gitbackend_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// A fork takes its files from the source head's working tree, not from
// the object store: the same files, links and modes, a clean status at
// once, and an index whose stat data is the copies' (git status does not
// read a file's content again).
func TestForkCopiesTheSourceHeadsFiles(t *testing.T) {
	f := newBigFixture(t, 300)
	gitbackend.SetFromDiskMin(f.b, 1)
	a := f.head("a")
	f.write(a, "README.md", "changed in a\n")
	f.write(a, "new/deep/file.txt", "new\n")
	require.NoError(t, os.Symlink("../README.md", filepath.Join(a.Info().Root, "new", "link")))
	require.NoError(t, os.WriteFile(filepath.Join(a.Info().Root, "new", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	before := gitbackend.DiskCopies(f.b)
	b, err := a.Fork(f.ctx, "b", nil)
	require.NoError(t, err)
	defer b.Close()
	copied := gitbackend.DiskCopies(f.b) - before
	require.GreaterOrEqual(t, copied, int64(300+4), "the fork's files were checked out, not copied")

	want := readTree(t, a.Info().Root)
	require.Equal(t, want, readTree(t, b.Info().Root))
	require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain"))
	// The copies' stat data is in the index: git's own view of it, with
	// no refresh, finds nothing changed.
	require.Equal(t, "", f.git(b.Info().Root, "diff-files", "--name-only"))
	cp, err := b.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, string(b.Info().Base), string(cp.ID), "a checkpoint of the untouched fork is its base")

	// Every file was copied: git checks the copies, and checks nothing
	// out. (Through a backend whose git processes are counted.)
	gb := gitbackend.New(gitbackend.Options{})
	var log processLog
	gitbackend.SetProcessHook(gb, log.start)
	ws, err := workspace.Open(f.ctx, gb, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	e, err := ws.NewHead("e").From(grove.Rev(cp.ID)).Create(f.ctx)
	require.NoError(t, err)
	defer e.Close()
	cmds := strings.Join(log.take(), "\n")
	require.Contains(t, cmds, "diff-files --quiet")
	require.NotContains(t, cmds, "read-tree --reset", "every file was copied, yet the head was checked out")
	require.Equal(t, want, readTree(t, e.Info().Root))

	// A head made from main beside a clean head of main copies too.
	before = gitbackend.DiskCopies(f.b)
	c := f.head("c")
	d, err := f.ws.NewHead("d").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer d.Close()
	require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(300), "a head of main was not copied from head c")
	require.Equal(t, readTree(t, c.Info().Root), readTree(t, d.Info().Root))
	require.Equal(t, "", f.git(d.Info().Root, "status", "--porcelain"))
}

// The source head's agent can change a file after the checkpoint and put
// its modification time back (and tell git not to trust the change time),
// so that git's stat data still calls it unchanged: the
// new head still holds the checkpoint's content, for the copy hashes what
// it copies.
func TestAttackFromDiskStatLies(t *testing.T) {
	f := newBigFixture(t, 50)
	gitbackend.SetFromDiskMin(f.b, 1)
	a := f.head("a")
	p := filepath.Join(a.Info().Root, "src", "main.go")
	old := time.Now().Add(-time.Minute) // not racily clean
	require.NoError(t, os.Chtimes(p, old, old))
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte("package evil\n"), 0o644)) // the same size
	require.NoError(t, os.Chtimes(p, old, old))
	f.git(a.Info().Root, "config", "core.trustctime", "false") // the change time is the kernel's
	require.Equal(t, "", f.git(a.Info().Root, "diff-files", "--name-only"), "the stat data no longer tells")

	before := gitbackend.DiskCopies(f.b)
	b, err := f.ws.NewHead("b").From(grove.Rev(cp.ID)).Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(50))
	data, err := os.ReadFile(filepath.Join(b.Info().Root, "src", "main.go"))
	require.NoError(t, err)
	require.Equal(t, "package main\n", string(data))
	require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain"))
}

// The source head's agent replaces a tracked file by a symlink to a
// secret of the orchestrator's, a tracked directory by a symlink to a
// directory of such secrets under the same names, and a file by a FIFO:
// nothing is read through a link, no open blocks, and the new head holds
// the checkpoint's files.
func TestAttackFromDiskLinksAndFIFOs(t *testing.T) {
	f := newBigFixture(t, 50)
	gitbackend.SetFromDiskMin(f.b, 1)
	a := f.head("a")
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	root := a.Info().Root
	secrets := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "secret"), []byte("hello\n"), 0o600)) // README.md's content, even
	require.NoError(t, os.MkdirAll(filepath.Join(secrets, "d05"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "d05", "f0005.txt"), []byte("file 5\n"), 0o600))
	require.NoError(t, os.Remove(filepath.Join(root, "README.md")))
	require.NoError(t, os.Symlink(filepath.Join(secrets, "secret"), filepath.Join(root, "README.md")))
	require.NoError(t, os.RemoveAll(filepath.Join(root, "tree")))
	require.NoError(t, os.Symlink(secrets, filepath.Join(root, "tree")))
	require.NoError(t, os.Remove(filepath.Join(root, "src", "main.go")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "src", "main.go"), 0o644))
	before := gitbackend.DiskCopies(f.b)
	done := make(chan error, 1)
	var b *workspace.Head
	go func() {
		var err error
		b, err = f.ws.NewHead("b").From(grove.Rev(cp.ID)).Create(f.ctx)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the create blocked on the FIFO")
	}
	defer b.Close()
	require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(0))
	got := readTree(t, b.Info().Root)
	require.Equal(t, "-rw-r--r-- hello\n", got["README.md"], "README.md is a regular file with the checkpoint's content")
	require.Equal(t, "-rw-r--r-- package main\n", got["src/main.go"])
	require.Equal(t, "-rw-r--r-- file 5\n", got["tree/d05/f0005.txt"])
	for p, c := range got {
		require.NotContains(t, c, "symlink", "%s is a link", p)
	}
	require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain"))
}

// Where the working files are not their blobs (an end-of-line conversion
// git applies on checkout), the copy checks each against its blob, finds
// it differs, and leaves it to git's checkout: the new head is what git
// would have made, and clean.
func TestFromDiskLeavesConvertedFilesToGit(t *testing.T) {
	f := newBigFixture(t, 40)
	gitbackend.SetFromDiskMin(f.b, 1)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".gitattributes"), []byte("*.txt text eol=crlf\n"), 0o644))
	f.git(f.repo, "add", ".gitattributes")
	f.git(f.repo, "commit", "-qm", "crlf")
	a := f.head("a")
	data, err := os.ReadFile(filepath.Join(a.Info().Root, "tree", "d01", "f0001.txt"))
	require.NoError(t, err)
	require.Equal(t, "file 1\r\n", string(data))
	before := gitbackend.DiskCopies(f.b)
	b := f.head("b")
	copied := gitbackend.DiskCopies(f.b) - before
	require.Greater(t, copied, int64(0))
	require.Less(t, copied, int64(40), "converted files are not their blobs")
	require.Equal(t, readTree(t, a.Info().Root), readTree(t, b.Info().Root))
	require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain"))
}

// When every file was copied, git's diff-files checks the copies against
// the index instead of a full checkout. A copy changed before that check
// (a fault the copy cannot make: the test changes it) — to another size,
// or to the same size in the same second — is found, and the checkout
// that follows makes the head the commit's. (A copy keeps its source's
// modification time: a same-size edit is seen by its new time, or, when
// the source changed in the second the index was written, by git hashing
// the file again.)
func TestFromDiskCheckFindsAChangedCopy(t *testing.T) {
	f := newBigFixture(t, 60)
	gitbackend.SetFromDiskMin(f.b, 1)
	a := f.head("a")
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	for _, change := range []struct {
		name string
		edit func(p string)
	}{
		{"another size", func(p string) { require.NoError(t, os.WriteFile(p, []byte("longer than before\n"), 0o644)) }},
		{"the same size", func(p string) { require.NoError(t, os.WriteFile(p, []byte("file X\n"), 0o644)) }},
	} {
		t.Run(change.name, func(t *testing.T) {
			called := false
			gitbackend.SetAfterDiskCopy(f.b, func(dir string) {
				called = true
				change.edit(filepath.Join(dir, "tree", "d07", "f0007.txt"))
			})
			defer gitbackend.SetAfterDiskCopy(f.b, nil)
			before := gitbackend.DiskCopies(f.b)
			b, err := f.ws.NewHead("b" + strings.ReplaceAll(change.name, " ", "-")).From(grove.Rev(cp.ID)).Create(f.ctx)
			require.NoError(t, err)
			defer b.Close()
			require.True(t, called, "not every file was copied")
			require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(60))
			got := readTree(t, b.Info().Root)
			require.Equal(t, "-rw-r--r-- file 7\n", got["tree/d07/f0007.txt"])
			require.Equal(t, readTree(t, a.Info().Root), got)
			require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain"))
		})
	}
}

// A copy keeps its source's modification time, so that git can trust its
// stat data at once (see fromdisk.go), where a checkout stamps every file
// with the time it wrote it.
func TestFromDiskCopiesKeepTheirSourcesTimes(t *testing.T) {
	f := newBigFixture(t, 60)
	gitbackend.SetFromDiskMin(f.b, 1)
	a := f.head("a")
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	src := filepath.Join(a.Info().Root, "tree", "d07", "f0007.txt")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(src, old, old))
	before := gitbackend.DiskCopies(f.b)
	b, err := f.ws.NewHead("b").From(grove.Rev(cp.ID)).Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(60))
	st, err := os.Stat(filepath.Join(b.Info().Root, "tree", "d07", "f0007.txt"))
	require.NoError(t, err)
	require.True(t, st.ModTime().Equal(old), "copy's time %v, source's %v", st.ModTime(), old)
	require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain"))
}
