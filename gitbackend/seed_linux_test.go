package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/loopfs"
	"github.com/groveworks/grove/workspace"
)

// imageFixture is a repository of 300 files, a link and an executable on
// a loop-mounted image of fstype.
func imageFixture(t *testing.T, fstype string) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	repo := filepath.Join(loopfs.Mount(t, fstype), "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, baseFiles()))
	f := &fixture{t: t, ctx: ctx, repo: repo}
	for i := range 300 {
		p := filepath.Join(repo, "tree", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%04d.txt", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644))
	}
	require.NoError(t, os.Symlink("../README.md", filepath.Join(repo, "tree", "link")))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "tree", "empty"), nil, 0o644))
	f.git(repo, "add", "-A")
	f.git(repo, "commit", "-qm", "more files")
	f.ws = f.open()
	t.Cleanup(func() { _ = f.ws.Close() }) // before the image is unmounted
	return f
}

// On Btrfs a new head is a snapshot of the workspace's seed of its tree,
// on XFS its files are the seed's clones: the same files, modes and
// links as a checkout, a clean status and an index that needs no
// refresh, at once. The seed is grove's own: what was written into it
// since is found and checked out over.
func TestHeadsFromSeeds(t *testing.T) {
	for _, c := range []struct {
		fstype string
		kind   headcopy.CoW
	}{{"btrfs", headcopy.Snapshot}, {"xfs", headcopy.Reflink}} {
		t.Run(c.fstype, func(t *testing.T) {
			f := imageFixture(t, c.fstype)
			require.Equal(t, c.kind, headcopy.Probe(filepath.Dir(f.repo)))
			want := readTree(t, f.repo)
			a := f.head("a")
			b := f.head("b")
			require.EqualValues(t, 2, gitbackend.Seeded(f.b), "both heads came from the seed")
			for _, h := range []*workspace.Head{a, b} {
				dir := h.Info().Root
				assert.Equal(t, want, readTree(t, dir), "the head holds the commit's files, modes and links")
				assert.Empty(t, f.git(dir, "status", "--porcelain"))
				assert.Empty(t, f.git(dir, "diff-files", "--name-only"), "the index has every file's stat data")
				assert.Equal(t, f.git(f.repo, "ls-files", "-s"), f.git(dir, "ls-files", "-s"))
			}
			var st unix.Stat_t
			require.NoError(t, unix.Stat(b.Info().Root, &st))
			if c.kind == headcopy.Snapshot {
				assert.EqualValues(t, 256, st.Ino, "the head is a subvolume of its own")
			}

			// The heads are independent: a change in one is not in the
			// other, nor in the seed the next head comes from.
			f.write(b, "README.md", "b's\n")
			cp, err := b.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, "b's\n", f.git(b.Info().Root, "show", string(cp.ID)+":README.md")+"\n")
			assert.Equal(t, want["README.md"], readTree(t, a.Info().Root)["README.md"])

			// Whoever writes the seed (from outside every head) is found
			// out: the next head has the commit's content.
			seed := filepath.Join(f.repo+".grove", ".grove-seeds")
			ents, err := os.ReadDir(seed)
			require.NoError(t, err)
			var tree string
			for _, e := range ents {
				if e.IsDir() {
					tree = e.Name()
				}
			}
			require.NotEmpty(t, tree, "%v", ents)
			require.NoError(t, os.WriteFile(filepath.Join(seed, tree, "src", "main.go"), []byte("package evil\n"), 0o644))
			c3 := f.head("c")
			assert.Equal(t, want, readTree(t, c3.Info().Root))
			assert.Empty(t, f.git(c3.Info().Root, "status", "--porcelain"))

			// A destroyed head goes, snapshot or not.
			_, err = b.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
			require.NoError(t, err)
			_, err = os.Lstat(b.Info().Root)
			assert.ErrorIs(t, err, os.ErrNotExist)

			// Heads of two more trees: the seeds of the last two are kept.
			for i, name := range []string{"d", "e"} {
				f.write(a, "more.txt", fmt.Sprint(i))
				cp, err := a.Checkpoint(f.ctx, nil)
				require.NoError(t, err)
				h, err := f.ws.NewHead(name).From(grove.Rev(cp.ID)).Create(f.ctx)
				require.NoError(t, err)
				defer h.Close()
				assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"))
			}
			ents, err = os.ReadDir(seed)
			require.NoError(t, err)
			var seeds []string
			for _, e := range ents {
				if e.IsDir() {
					seeds = append(seeds, e.Name())
				}
			}
			assert.Len(t, seeds, 2, "%v", seeds)
			assert.NotContains(t, seeds, tree)

			// The seeds' directory made a link (by a hand outside every
			// head) leads grove nowhere: the head is checked out, and
			// nothing where the link leads is touched.
			decoy := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(decoy, "old"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(decoy, "old.index"), []byte("mine"), 0o644))
			require.NoError(t, os.RemoveAll(seed))
			require.NoError(t, os.Symlink(decoy, seed))
			seeded := gitbackend.Seeded(f.b)
			g := f.head("g")
			assert.Empty(t, f.git(g.Info().Root, "status", "--porcelain"))
			assert.Equal(t, seeded, gitbackend.Seeded(f.b))
			ents, err = os.ReadDir(decoy)
			require.NoError(t, err)
			assert.Len(t, ents, 2, "%v", ents)
		})
	}
}

// On a file system that shares no blocks there are no seeds.
func TestNoSeedsWithoutCopyOnWrite(t *testing.T) {
	f := newBigFixture(t, 300)
	if headcopy.Probe(filepath.Dir(f.repo)) != headcopy.NoCoW {
		t.Fatalf("the temp dir %s shares blocks: this test needs a file system that does not", f.repo)
	}
	f.head("a")
	f.head("b")
	assert.Zero(t, gitbackend.Seeded(f.b))
	_, err := os.Stat(filepath.Join(f.repo+".grove", ".grove-seeds"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// What an agent can plant for the checkout that makes a seed — a filter
// its commit's .gitattributes names, an fsmonitor and a core.worktree in
// the common configuration, a post-checkout hook, a link out of the tree
// — runs nothing, writes nowhere else, and the head made from the seed
// holds the commit's bytes and the link as a link.
func TestAttackASeedsCheckoutRunsNothingAndStaysInside(t *testing.T) {
	for _, fstype := range []string{"btrfs", "xfs"} {
		t.Run(fstype, func(t *testing.T) {
			f := imageFixture(t, fstype)
			a := f.head("a")
			marks, decoy := t.TempDir(), t.TempDir()
			run := func(name string) string { return "touch " + filepath.Join(marks, name) }
			common := commonOf(f)
			appendFile(t, filepath.Join(common, "config"), "[filter \"evil\"]\n\tsmudge = "+run("smudge")+"\n\tclean = "+run("clean")+"\n\trequired = true\n"+
				"[core]\n\tfsmonitor = "+run("fsmonitor")+"\n\tworktree = "+decoy+"\n")
			hook := filepath.Join(common, "hooks", "post-checkout")
			require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
			require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\n"+run("hook")+"\n"), 0o755))
			f.write(a, ".gitattributes", "*.txt filter=evil\n")
			f.write(a, "tree/d00/f0000.txt", "the agent's\n")
			require.NoError(t, os.Symlink("../../..", filepath.Join(a.Info().Root, "up")))
			cp, err := a.Checkpoint(f.ctx, nil)
			require.NoError(t, err)

			seeded := gitbackend.Seeded(f.b)
			h, err := f.ws.NewHead("from-seed").From(grove.Rev(cp.ID)).Create(f.ctx)
			require.NoError(t, err)
			defer h.Close()
			require.Equal(t, seeded+1, gitbackend.Seeded(f.b), "the head came from a new seed")
			ents, err := os.ReadDir(marks)
			require.NoError(t, err)
			assert.Empty(t, ents, "a command the agent planted ran")
			ents, err = os.ReadDir(decoy)
			require.NoError(t, err)
			assert.Empty(t, ents, "core.worktree moved the checkout")
			dir := h.Info().Root
			data, err := os.ReadFile(filepath.Join(dir, "tree", "d00", "f0000.txt"))
			require.NoError(t, err)
			assert.Equal(t, "the agent's\n", string(data), "the commit's bytes, no filter between")
			target, err := os.Readlink(filepath.Join(dir, "up"))
			require.NoError(t, err)
			assert.Equal(t, "../../..", target)
			var st unix.Stat_t
			require.NoError(t, unix.Lstat(filepath.Join(dir, "up"), &st))
			assert.Equal(t, uint32(unix.S_IFLNK), st.Mode&unix.S_IFMT)
			assert.Empty(t, f.git(dir, "-c", "core.fsmonitor=false", "-c", "filter.evil.required=false", "-c", "filter.evil.clean=cat", "diff-files", "--name-only"))
		})
	}
}

// A seed changed behind grove's back so that git's stat data cannot tell
// (the same size, the modification time put back, in the second the seed
// was checked out, when only the seed's index's own time can tell) is
// found out all the same: a head made from it holds the commit's bytes.
func TestASeedChangedAsGitCannotSeeIsFoundOut(t *testing.T) {
	for _, fstype := range []string{"btrfs", "xfs"} {
		t.Run(fstype, func(t *testing.T) {
			f := imageFixture(t, fstype)
			a := f.head("a")
			seeds := filepath.Join(f.repo+".grove", ".grove-seeds")
			for i := range 2 {
				// A head at a new tree makes its seed; the seed is
				// changed at once, in the same second if the machine
				// is quick, and by the same number of bytes.
				f.write(a, "more.txt", fmt.Sprint(i))
				cp, err := a.Checkpoint(f.ctx, nil)
				require.NoError(t, err)
				h, err := f.ws.NewHead(fmt.Sprint("first-", i)).From(grove.Rev(cp.ID)).Create(f.ctx)
				require.NoError(t, err)
				defer h.Close()
				tree := f.git(f.repo, "rev-parse", string(cp.ID)+"^{tree}")
				p := filepath.Join(seeds, tree, "src", "main.go")
				fi, err := os.Stat(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, []byte("package evil\n"), 0o644))
				require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
				// The next head is made in a later second, as on a slow
				// machine: its index's time says nothing of the change.
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))

				g, err := f.ws.NewHead(fmt.Sprint("next-", i)).From(grove.Rev(cp.ID)).Create(f.ctx)
				require.NoError(t, err)
				defer g.Close()
				data, err := os.ReadFile(filepath.Join(g.Info().Root, "src", "main.go"))
				require.NoError(t, err)
				assert.Equal(t, "package main\n", string(data), "the seed's change reached a head")
				assert.Empty(t, f.git(g.Info().Root, "status", "--porcelain"))
			}
		})
	}
}
