package gitbackend_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// Attacks on what grove reads without a process: the ref files, the loose
// objects and the index's cache-tree, all of which an agent can write.

// An alternates file naming the repository's own object directory (which
// git skips, and a reader that follows it recurses through for ever) and
// a HEAD naming an object that does not exist: the checkpoint fails with a
// typed error; grove neither crashes nor hangs.
func TestAttackAlternatesLoopAndMissingHead(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	common := filepath.Join(f.repo, ".git")
	require.NoError(t, os.MkdirAll(filepath.Join(common, "objects", "info"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(common, "objects", "info", "alternates"), []byte("objects\n"+filepath.Join(common, "objects")+"\n"), 0o644))
	admin := strings.TrimSpace(f.git(h.Info().Root, "rev-parse", "--absolute-git-dir"))
	require.NoError(t, os.WriteFile(filepath.Join(admin, "HEAD"), []byte(strings.Repeat("ab", 20)+"\n"), 0o644))
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	_, err := h.Checkpoint(ctx, nil)
	require.Error(t, err)
	require.NotEqual(t, backend.Canceled, workspace.CodeOf(err), "answered, not timed out: %v", err)
	require.NoError(t, os.WriteFile(filepath.Join(admin, "HEAD"), []byte("ref: refs/heads/"+h.Info().Branch+"\n"), 0o644))
	_, err = h.Checkpoint(ctx, nil)
	require.NoError(t, err, "with its HEAD back, the head checkpoints again")
}

// An agent turns its own branch into a symbolic ref to main: neither a
// checkpoint nor a restore moves main.
func TestAttackBranchMadeSymbolicRef(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	mainBefore := f.git(f.repo, "rev-parse", "refs/heads/main")
	// What an agent's git symbolic-ref would write (git refuses to point
	// a branch that a worktree has checked out elsewhere only by name).
	f.git(h.Info().Root, "symbolic-ref", "refs/heads/"+h.Info().Branch, "refs/heads/main")
	f.write(h, "x.txt", "x")
	_, _ = h.Checkpoint(f.ctx, nil)
	require.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "refs/heads/main"), "a checkpoint moved main")
	_, _ = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "refs/heads/main"), "a restore moved main")
	f.git(f.repo, "fsck", "--strict")
}

// An index whose cache-tree records a tree that does not exist (the agent
// rewrote the extension and the checksum): no checkpoint points at a
// missing tree.
func TestAttackForgedCacheTree(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	f.write(h, "x.txt", "x")
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	admin := strings.TrimSpace(f.git(h.Info().Root, "rev-parse", "--absolute-git-dir"))
	index := filepath.Join(admin, "index")
	f.git(h.Info().Root, "write-tree") // a valid cache-tree in the head's index
	data, err := os.ReadFile(index)
	require.NoError(t, err)
	body := data[:len(data)-sha1.Size]
	i := bytes.Index(body, []byte("TREE"))
	require.Positive(t, i, "the index has a cache-tree")
	size := int(binary.BigEndian.Uint32(body[i+4 : i+8]))
	ext := body[i+8 : i+8+size]
	nl := bytes.IndexByte(ext, '\n')
	require.Positive(t, nl)
	copy(ext[nl+1:nl+1+sha1.Size], bytes.Repeat([]byte{0x5a}, sha1.Size))
	sum := sha1.Sum(body)
	require.NoError(t, os.WriteFile(index, append(body, sum[:]...), 0o644))
	old := time.Now().Add(-time.Minute)
	require.NoError(t, os.Chtimes(filepath.Join(h.Info().Root, "x.txt"), old, old))
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	tree := f.git(f.repo, "rev-parse", string(cp.ID)+"^{tree}")
	require.NotEqual(t, strings.Repeat("5a", sha1.Size), tree)
	f.write(h, "y.txt", "y")
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.git(f.repo, "cat-file", "-e", string(cp.ID)+"^{tree}")
	f.git(f.repo, "fsck", "--strict")
}

// A replacement object (refs/replace/<commit>) for the head's commit, as
// an agent can write: grove reads the commit itself, in-process or
// through git, so a checkpoint with no change records nothing.
func TestAttackReplaceObjects(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	f.write(h, "x.txt", "x")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.git(f.repo, "gc", "-q") // packed: only git can read it now
	f.git(f.repo, "replace", string(cp.ID), "main")
	again, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.False(t, again.New, "the head has not changed")
	require.Equal(t, cp.ID, again.ID)
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	require.False(t, st.Dirty)
}

// A huge (sparse) index: grove does not read it whole; the checkpoint
// treats it as damaged and reads the head's commit instead.
func TestAttackHugeIndex(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	admin := strings.TrimSpace(f.git(h.Info().Root, "rev-parse", "--absolute-git-dir"))
	require.NoError(t, os.Truncate(filepath.Join(admin, "index"), 3<<29)) // 1.5 GiB of holes
	f.write(h, "x.txt", "x")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cp, err := h.Checkpoint(f.ctx, nil)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "the checkpoint read the index whole")
	require.True(t, cp.New)
	require.Contains(t, f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID)), "x.txt")
	f.git(h.Info().Root, "status", "--porcelain")
}

// One head's agent plants a large index, valid to git, naming thousands of
// paths; grove reads it (a checkpoint) into the storage it keeps for index
// reads, and then restores another head, whose smaller index is read into
// that same storage: nothing of the planted index reaches the other head's
// files or checkpoints.
func TestAttackPlantedIndexDoesNotReachAnotherHead(t *testing.T) {
	f := newFixture(t)
	a, b := f.head("a"), f.head("b")
	f.write(b, "kept.txt", "kept\n")
	base, err := b.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	want := readTree(t, b.Info().Root)

	blob := f.git(a.Info().Root, "hash-object", "-w", "--stdin")
	var info strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&info, "100644 %s\tplanted/%04d/evil.txt\n", blob, i)
	}
	cmd := exec.Command("git", "update-index", "--index-info")
	cmd.Dir = a.Info().Root
	cmd.Stdin = strings.NewReader(info.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	_, err = a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)

	f.write(b, "kept.txt", "changed\n")
	f.write(b, "new.txt", "new\n")
	_, err = b.Restore(f.ctx, workspace.Rev(base.ID), &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	require.Equal(t, want, readTree(t, b.Info().Root))
	again, err := b.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, base.ID, again.ID, "the restored head is its checkpoint")
	require.NotContains(t, f.git(f.repo, "ls-tree", "-r", "--name-only", string(again.ID)), "planted")
	require.Empty(t, f.git(b.Info().Root, "status", "--porcelain"))
}

// forgeCacheTree rewrites the root of the cache-tree in the index of the
// head at root to name tree (hex), and the checksum to match: the index
// then claims to be tree's whatever its entries are.
func forgeCacheTree(t *testing.T, f *fixture, root, tree string) {
	t.Helper()
	f.git(root, "write-tree") // a cache-tree to forge
	index := filepath.Join(strings.TrimSpace(f.git(root, "rev-parse", "--absolute-git-dir")), "index")
	data, err := os.ReadFile(index)
	require.NoError(t, err)
	body := data[:len(data)-sha1.Size]
	i := bytes.Index(body, []byte("TREE"))
	require.Positive(t, i, "the index has a cache-tree")
	ext := body[i+8:]
	nl := bytes.IndexByte(ext, '\n')
	require.Positive(t, nl)
	raw, err := hex.DecodeString(tree)
	require.NoError(t, err)
	copy(ext[nl+1:nl+1+sha1.Size], raw)
	sum := sha1.Sum(body)
	require.NoError(t, os.WriteFile(index, append(body, sum[:]...), 0o644))
}

// A new head copies its files from another head, taking that head's
// index as the list of what to copy. The agent there rewrites its index
// to list what it wants copied — a path the commit does not have, another
// blob and mode for paths it does — with a cache-tree claiming the
// commit's tree, and puts those files on disk: the new head is the
// commit's all the same.
func TestAttackForgedIndexNeverShapesACopiedHead(t *testing.T) {
	defer gitbackend.SetFromDiskMin(1)()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, f *fixture, root string)
	}{
		{"a path the commit lacks", func(t *testing.T, f *fixture, root string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, "tree", "d07", "planted"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "tree", "d07", "planted", "run.sh"), []byte("#!/bin/sh\nboom\n"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "aaa.sh"), []byte("boom\n"), 0o755))
		}},
		{"another blob and mode", func(t *testing.T, f *fixture, root string) {
			require.NoError(t, os.WriteFile(filepath.Join(root, "tree", "d07", "f0007.txt"), []byte("evil 7\n"), 0o644))
			require.NoError(t, os.Chmod(filepath.Join(root, "tree", "d08", "f0008.txt"), 0o755))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBigFixture(t, 60)
			a := f.head("a")
			cp, err := a.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			want := readTree(t, a.Info().Root)
			root := a.Info().Root
			tc.plant(t, f, root)
			f.git(root, "add", "-A")
			forgeCacheTree(t, f, root, f.git(f.repo, "rev-parse", string(cp.ID)+"^{tree}"))

			before := gitbackend.DiskCopies()
			b, err := f.ws.NewHead("b").From(workspace.Rev(cp.ID)).Create(f.ctx)
			require.NoError(t, err)
			defer b.Close()
			require.Greater(t, gitbackend.DiskCopies()-before, int64(50), "the forged index was taken as the list to copy")
			require.Equal(t, want, readTree(t, b.Info().Root))
			require.Equal(t, "", f.git(b.Info().Root, "status", "--porcelain", "--ignored", "--untracked-files=all"))
		})
	}
}

// A copy keeps its source's modification time, which the source's agent
// sets: a day ahead, or at the epoch. The new head is still its commit's,
// and an edit made in it at once, of the same size, is seen by Status and
// taken by a checkpoint (git compares the change time too, which only the
// kernel sets).
func TestAttackSourceTimesNeverHideAnEdit(t *testing.T) {
	defer gitbackend.SetFromDiskMin(1)()
	f := newBigFixture(t, 60)
	a := f.head("a")
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	future, epoch := time.Now().Add(24*time.Hour), time.Unix(0, 0)
	require.NoError(t, os.Chtimes(filepath.Join(a.Info().Root, "tree", "d07", "f0007.txt"), future, future))
	require.NoError(t, os.Chtimes(filepath.Join(a.Info().Root, "tree", "d08", "f0008.txt"), epoch, epoch))

	before := gitbackend.DiskCopies()
	b, err := f.ws.NewHead("b").From(workspace.Rev(cp.ID)).Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	require.Greater(t, gitbackend.DiskCopies()-before, int64(60))
	require.Equal(t, readTree(t, a.Info().Root), readTree(t, b.Info().Root))
	st, err := b.Status(f.ctx)
	require.NoError(t, err)
	require.False(t, st.Dirty)

	f.write(b, "tree/d07/f0007.txt", "file X\n") // the same size as "file 7\n"
	f.write(b, "tree/d08/f0008.txt", "file Y\n")
	st, err = b.Status(f.ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []backend.Change{
		{Path: "tree/d07/f0007.txt", Kind: backend.ChangeModified},
		{Path: "tree/d08/f0008.txt", Kind: backend.ChangeModified},
	}, st.Changes)
	got, err := b.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, got.New)
	require.Equal(t, "file X", f.git(f.repo, "show", string(got.ID)+":tree/d07/f0007.txt"))
	require.Equal(t, "file Y", f.git(f.repo, "show", string(got.ID)+":tree/d08/f0008.txt"))
}
