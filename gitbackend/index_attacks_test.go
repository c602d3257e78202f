package gitbackend_test

import (
	"bytes"
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

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Attacks through an index an agent crafts: hidden entries and marks,
// forged cache-trees, huge indexes, indexes planted for other heads.

// sealIndex appends a valid SHA-1 trailer to an index body.
func sealIndex(body []byte) []byte {
	sum := sha1.Sum(body)
	return append(body, sum[:]...)
}

// indexEntry is the 62-byte fixed part of an index entry (SHA-1).
func indexEntry(mode uint32, oid [20]byte, flags uint16, stat [6]uint32) []byte {
	b := make([]byte, 62)
	for i, v := range stat {
		binary.BigEndian.PutUint32(b[i*4:], v)
	}
	binary.BigEndian.PutUint32(b[24:], mode)
	copy(b[40:60], oid[:])
	binary.BigEndian.PutUint16(b[60:], flags)
	return b
}

func indexHeader(version, n uint32) []byte {
	b := []byte("DIRC\x00\x00\x00\x00\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(b[4:], version)
	binary.BigEndian.PutUint32(b[8:], n)
	return b
}

// hiddenEntryIndex is a version 2 index that git reads as two entries,
// a regular file "A" and the entry (mode, oid, flags, name), while grove's
// readMarks reads a second entry of other bytes: git takes a name's length
// from the entry's flags (here 10: "A\x00xxxxxxxx"), readMarks from its
// first NUL (1), so their second entries start 16 bytes apart. readMarks'
// second entry is made of the padding and the real entry's stat fields
// and object ID: a mode that is no gitlink, no marks (if oid[4] < 0x80).
func hiddenEntryIndex(mode uint32, oid [20]byte, flags uint16, name string) []byte {
	body := indexHeader(2, 2)
	body = append(body, indexEntry(0o100644, [20]byte{0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b, 0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2, 0xe4, 0x8c, 0x53, 0x91}, 10, [6]uint32{})...)
	body = append(body, 'A', 0, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 0, 0, 0, 0, 0, 0, 0, 0) // 62+18 = 80
	stat := [6]uint32{0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x01010101, 0x01010101}
	body = append(body, indexEntry(mode, oid, flags|uint16(len(name)), stat)...)
	body = append(body, name...)
	body = append(body, make([]byte, (62+len(name)+8)&^7-62-len(name))...)
	return sealIndex(body)
}

// TestAGitlinkHiddenByACraftedIndexIsStillDropped: the agent
// stages its nested repository sub as a gitlink, then rewrites its index
// (valid checksum) so that the gitlink's name length in the flags and its
// NUL position disagree in the entry before it. grove's readMarks walks
// the entries by NUL and finds no gitlink, so unmark leaves it; git add
// -A then runs git status inside sub, with sub's own configuration, whose
// clean filter runs with the orchestrator's rights.
func TestAGitlinkHiddenByACraftedIndexIsStillDropped(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	sub := nestedRepoWithFilter(t, f, root)
	// The gitlink must name sub's HEAD (else git sees it changed and
	// never looks inside); its fifth byte lands in the flags readMarks
	// reads, whose top bit (assume-valid) must be clear.
	var oid [20]byte
	for i := 0; ; i++ {
		id, err := hex.DecodeString(f.git(sub, "rev-parse", "HEAD"))
		require.NoError(t, err)
		copy(oid[:], id)
		if oid[4] < 0x80 {
			break
		}
		f.git(sub, "commit", "-q", "--amend", "-m", fmt.Sprintf("nested %d", i))
	}
	f.git(sub, "config", "filter.q.clean", script)
	old := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	stale := func() { require.NoError(t, os.Chtimes(filepath.Join(sub, "a"), old, old)); old = old.Add(time.Hour) }
	index := filepath.Join(adminOf(t, root), "index")
	require.NoError(t, os.WriteFile(index, hiddenEntryIndex(0o160000, oid, 0, "sub"), 0o644))
	t.Logf("git ls-files -s:\n%s", f.git(root, "ls-files", "-s"))

	// Control: plain git add -A on this index runs sub's filter.
	saved, err := os.ReadFile(index)
	require.NoError(t, err)
	stale()
	_, err = gitUser(f.ctx, root, "add", "-A")
	t.Logf("plain git add -A: %v", err)
	require.Contains(t, markersIn(t, markers), "pwned", "plain git add -A does not run it, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))
	require.NoError(t, os.WriteFile(index, saved, 0o644))

	stale()
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, markersIn(t, markers), "grove's checkpoint ran the nested repository's filter")
	assert.NotContains(t, f.git(root, "ls-tree", "-r", string(cp.ID)), "160000", "the nested repository went in as a gitlink")
	assert.Equal(t, "a", f.git(root, "show", string(cp.ID)+":sub/a"), "the nested repository's files are captured")
}

// TestAnAssumeUnchangedMarkHiddenByACraftedIndexIsStillCleared: the same misparse
// hides an assume-unchanged mark from unmark (attacks2's fix): git add -A
// trusts the mark, and the checkpoint silently misses the edit.
func TestAnAssumeUnchangedMarkHiddenByACraftedIndexIsStillCleared(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	id, err := hex.DecodeString(f.git(root, "rev-parse", "HEAD:README.md"))
	require.NoError(t, err)
	var oid [20]byte
	copy(oid[:], id)
	require.Less(t, oid[4], byte(0x80))
	require.NoError(t, os.WriteFile(filepath.Join(adminOf(t, root), "index"), hiddenEntryIndex(0o100644, oid, 0x8000, "README.md"), 0o644))
	t.Logf("git ls-files -v:\n%s", f.git(root, "ls-files", "-v"))
	f.write(h, "README.md", "precious unsaved work\n")
	index := filepath.Join(adminOf(t, root), "index")
	saved, err := os.ReadFile(index)
	require.NoError(t, err)
	_, err = gitUser(f.ctx, root, "add", "-A")
	require.NoError(t, err)
	t.Logf("after plain add -A:\n%s", f.git(root, "ls-files", "-s", "-v"))
	require.NoError(t, os.WriteFile(index, saved, 0o644))

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "precious unsaved work", f.git(f.repo, "show", string(cp.ID)+":README.md"), "the checkpoint misses the edit")
}

// TestAnEditHiddenBehindIndexMarksIsCaptured: the agent marks a tracked
// file assume-unchanged (or skip-worktree) in its index, then edits it.
// git add -A trusts the mark; grove clears it on its private index, so
// the checkpoint holds the edit, and a destroy loses nothing.
func TestAnEditHiddenBehindIndexMarksIsCaptured(t *testing.T) {
	for _, bit := range []string{"--assume-unchanged", "--skip-worktree"} {
		t.Run(bit, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root := h.Info().Root
			f.git(root, "update-index", bit, "README.md")
			f.write(h, "README.md", "precious unsaved work\n")
			cp, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, "precious unsaved work", f.git(f.repo, "show", string(cp.ID)+":README.md"), "the checkpoint holds the edit")
			f.write(h, "README.md", "more precious work\n")
			res, err := h.Destroy(f.ctx, nil)
			require.NoError(t, err, "destroy without Discard")
			require.NotNil(t, res.Final, "destroy took no final checkpoint of the edit")
			assert.Equal(t, "more precious work", f.git(f.repo, "show", string(res.Final.ID)+":README.md"))
		})
	}
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
	_, err = b.Restore(f.ctx, grove.Rev(base.ID), &workspace.RestoreOptions{Discard: true})
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
			gitbackend.SetFromDiskMin(f.b, 1)
			a := f.head("a")
			cp, err := a.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			want := readTree(t, a.Info().Root)
			root := a.Info().Root
			tc.plant(t, f, root)
			f.git(root, "add", "-A")
			forgeCacheTree(t, f, root, f.git(f.repo, "rev-parse", string(cp.ID)+"^{tree}"))

			before := gitbackend.DiskCopies(f.b)
			b, err := f.ws.NewHead("b").From(grove.Rev(cp.ID)).Create(f.ctx)
			require.NoError(t, err)
			defer b.Close()
			require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(50), "the forged index was taken as the list to copy")
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
	f := newBigFixture(t, 60)
	gitbackend.SetFromDiskMin(f.b, 1)
	a := f.head("a")
	cp, err := a.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	future, epoch := time.Now().Add(24*time.Hour), time.Unix(0, 0)
	require.NoError(t, os.Chtimes(filepath.Join(a.Info().Root, "tree", "d07", "f0007.txt"), future, future))
	require.NoError(t, os.Chtimes(filepath.Join(a.Info().Root, "tree", "d08", "f0008.txt"), epoch, epoch))

	before := gitbackend.DiskCopies(f.b)
	b, err := f.ws.NewHead("b").From(grove.Rev(cp.ID)).Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	require.Greater(t, gitbackend.DiskCopies(f.b)-before, int64(60))
	require.Equal(t, readTree(t, a.Info().Root), readTree(t, b.Info().Root))
	st, err := b.Status(f.ctx)
	require.NoError(t, err)
	require.False(t, st.Dirty)

	f.write(b, "tree/d07/f0007.txt", "file X\n") // the same size as "file 7\n"
	f.write(b, "tree/d08/f0008.txt", "file Y\n")
	st, err = b.Status(f.ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []grove.Change{
		{Path: "tree/d07/f0007.txt", Kind: grove.ChangeModified},
		{Path: "tree/d08/f0008.txt", Kind: grove.ChangeModified},
	}, st.Changes)
	got, err := b.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, got.New)
	require.Equal(t, "file X", f.git(f.repo, "show", string(got.ID)+":tree/d07/f0007.txt"))
	require.Equal(t, "file Y", f.git(f.repo, "show", string(got.ID)+":tree/d08/f0008.txt"))
}
