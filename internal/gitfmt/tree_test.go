package gitfmt

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The in-process diff of an index with a tree says what git diff-index
// says — the paths the tree adds, whether it drops any, whether a
// .gitignore differs — over random pairs of trees that add, drop and
// change files, swap files and directories, change modes and links, with
// the index's cache-tree whole or cut where entries changed.
func TestDiffTreesIsDiffIndex(t *testing.T) {
	rp, dir := testRepo(t)
	var buf Buffer
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	var blobs []string
	for i := range 4 {
		blobs = append(blobs, plainGit(t, dir, nil, fmt.Sprintf("content %d\n", i), "hash-object", "-w", "--stdin"))
	}
	names := []string{"a", "b.txt", ".gitignore", "d/x", "d/y", "d/.gitignore", "d/e/z", "d/e/w", "f/g/h/i", "a-b", "a.c", "A"}
	// state makes a commit of random paths (a path whose parent is a file
	// taken already is left out) and returns it.
	state := func(rng *rand.Rand) (commit string, entries map[string]string) {
		entries = map[string]string{}
		for _, n := range names {
			if rng.IntN(3) == 0 {
				continue
			}
			if rng.IntN(4) == 0 { // a file where others have a directory, or the reverse
				if i := strings.LastIndexByte(n, '/'); i > 0 {
					n = n[:i]
				} else {
					n += "/sub"
				}
			}
			mode := []string{"100644", "100755", "120000"}[rng.IntN(3)]
			entries[n] = mode + " " + blobs[rng.IntN(len(blobs))]
		}
		for p := range entries { // no path below a file
			for q := range entries {
				if strings.HasPrefix(q, p+"/") {
					delete(entries, p)
				}
			}
		}
		idx := filepath.Join(t.TempDir(), "index")
		plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, indexInfo(entries), "update-index", "--index-info")
		tree := plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, "", "write-tree")
		return plainGit(t, dir, env, "", "commit-tree", "-m", "s", tree), entries
	}
	rng := rand.New(rand.NewPCG(1, 2))
	inProcess := 0
	for round := range 60 {
		from, fromEntries := state(rng)
		to, _ := state(rng)
		idx := filepath.Join(t.TempDir(), "index")
		plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, "", "read-tree", from)
		if round%2 == 1 && len(fromEntries) > 0 {
			// Change an entry: the cache-tree of its directories is cut.
			for p, e := range fromEntries {
				mode, _, _ := strings.Cut(e, " ")
				plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, indexInfo(map[string]string{p: mode + " " + blobs[rng.IntN(len(blobs))]}), "update-index", "--index-info")
				break
			}
		}
		wantAdds, wantDrops, wantRules := ParseDiffIndex(plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, "", "diff-index", "--cached", "--name-status", "--no-renames", "-z", to, "--"))
		data, err := buf.ReadIndex(idx)
		require.NoError(t, err)
		v, ok := ReadIndexView(idx, data)
		require.True(t, ok, "round %d", round)
		adds, drops, rules, ok := rp.DiffIndex(context.Background(), &v, to)
		require.True(t, ok, "round %d: all trees are loose", round)
		inProcess++
		// What the diff answers is its own: the index's bytes go back to
		// be read into by the next operation.
		for i := range data {
			data[i] = 'x'
		}
		buf.Put(data)
		slices.Sort(adds)
		slices.Sort(wantAdds)
		require.Equal(t, wantAdds, adds, "round %d: adds", round)
		require.Equal(t, wantDrops, drops, "round %d: drops", round)
		require.Equal(t, wantRules, rules, "round %d: rules", round)
	}
	require.Equal(t, 60, inProcess)

	// Packed trees and commits (after a git gc) are read through git
	// cat-file, with the same answers.
	type pair struct{ to, idx string }
	var pairs []pair
	for range 20 {
		from, _ := state(rng)
		to, _ := state(rng)
		idx := filepath.Join(t.TempDir(), "index")
		plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, "", "read-tree", from)
		pairs = append(pairs, pair{to, idx})
	}
	plainGit(t, dir, nil, "", "repack", "-adq")
	plainGit(t, dir, nil, "", "prune-packed")
	packed := NewStore(rp.dir, catFile(dir)) // nothing remembered
	for i, p := range pairs {
		wantAdds, wantDrops, wantRules := ParseDiffIndex(plainGit(t, dir, []string{"GIT_INDEX_FILE=" + p.idx}, "", "diff-index", "--cached", "--name-status", "--no-renames", "-z", p.to, "--"))
		v, ok := ReadIndexView(p.idx, nil)
		require.True(t, ok)
		adds, drops, rules, ok := packed.DiffIndex(context.Background(), &v, p.to)
		require.True(t, ok, "pair %d: packed objects read through git", i)
		slices.Sort(adds)
		slices.Sort(wantAdds)
		require.Equal(t, wantAdds, adds, "pair %d: adds", i)
		require.Equal(t, wantDrops, drops, "pair %d: drops", i)
		require.Equal(t, wantRules, rules, "pair %d: rules", i)
	}
	_, ok := packed.TreeOf(context.Background(), strings.Repeat("e", 40))
	require.False(t, ok, "a commit that does not exist")
	_, ok = packed.TreeAny(context.Background(), make([]byte, 20))
	require.False(t, ok, "a tree that does not exist")
}

// indexInfo is entries (path to "mode oid") as git update-index
// --index-info reads them.
func indexInfo(entries map[string]string) string {
	var b strings.Builder
	for p, e := range entries {
		fmt.Fprintf(&b, "%s\t%s\n", e, p)
	}
	return b.String()
}

// indexBytes is an index of version 2 holding names (each a regular file
// of blob oid), in the order given, with no extensions: what an agent can
// write as its head's index, checksum and all.
func indexBytes(oid []byte, names ...string) []byte {
	var b []byte
	b = append(b, "DIRC"...)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint32(b, uint32(len(names)))
	for _, n := range names {
		start := len(b)
		b = append(b, make([]byte, 24)...)
		b = binary.BigEndian.AppendUint32(b, 0o100644)
		b = append(b, make([]byte, 12)...)
		b = append(b, oid...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(n)))
		b = append(b, n...)
		for pad := 8 - (len(b)-start)%8; pad > 0; pad-- {
			b = append(b, 0)
		}
	}
	sum := sha1.Sum(b)
	return append(b, sum[:]...)
}

// An index whose entries are out of git's order (forged, or a split
// index's) is not read in-process: the diff declines, and git is asked,
// rather than a directory's entries being looked for where they are not
// (which once cut a name short of its directory's prefix: a panic).
func TestDiffTreesRefusesUnsortedIndexes(t *testing.T) {
	rp, dir := testRepo(t)
	blob := plainGit(t, dir, nil, "x\n", "hash-object", "-w", "--stdin")
	oid, err := hex.DecodeString(blob)
	require.NoError(t, err)
	env := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}
	idx := filepath.Join(t.TempDir(), "index")
	plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, indexInfo(map[string]string{"src/x": "100644 " + blob, "src/w": "100644 " + blob, "z": "100644 " + blob}), "update-index", "--index-info")
	tree := plainGit(t, dir, []string{"GIT_INDEX_FILE=" + idx}, "", "write-tree")
	target := plainGit(t, dir, env, "", "commit-tree", "-m", "t", tree)

	forged := filepath.Join(t.TempDir(), "index")
	require.NoError(t, os.WriteFile(forged, indexBytes(oid, "src/x", "b", "src/y", "z"), 0o644))
	require.NoError(t, CheckIndex(indexBytes(oid, "src/x", "b", "src/y", "z")))
	_, ok := ReadIndexView(forged, nil)
	require.False(t, ok, "an unsorted index was read in-process")
	_, ok = ReadIndexView(forged+"-sorted", indexBytes(oid, "b", "src/x", "src/y", "z"))
	require.True(t, ok)

	// Were one let through, the walk checks each name against its
	// directory and declines; it never panics.
	v := IndexView{Names: []string{"src/x", "b", "src/y", "z"}, Modes: []uint32{0o100644, 0o100644, 0o100644, 0o100644}, OIDs: [][]byte{oid, oid, oid, oid}}
	require.NotPanics(t, func() {
		_, _, _, ok = rp.DiffIndex(context.Background(), &v, target)
	})
	require.False(t, ok)
}

// withExtension is the index idx with one more extension, checksum and all.
func withExtension(idx []byte, sig string, body []byte) []byte {
	b := append([]byte(nil), idx[:len(idx)-sha1.Size]...)
	b = append(b, sig...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	sum := sha1.Sum(b)
	return append(b, sum[:]...)
}

// An index with an extension a reader must understand (a split index's
// "link", a sparse index's "sdir", any other git would refuse) is git's
// to read: were it read in-process, no git command would look at it
// before the restore's read-tree, which would fail on it every time.
func TestDiffTreesLeavesMandatoryExtensionsToGit(t *testing.T) {
	oid := make([]byte, sha1.Size)
	plain := indexBytes(oid, "a", "b/c")
	_, ok := ReadIndexView("", plain)
	require.True(t, ok)
	_, ok = ReadIndexView("", withExtension(plain, "UNTR", []byte("x")))
	require.True(t, ok, "an optional extension is skipped")
	for _, sig := range []string{"link", "sdir", "zzzz"} {
		_, ok = ReadIndexView("", withExtension(plain, sig, []byte("x")))
		require.False(t, ok, sig)
	}
}

// A tree read once is remembered: read again, even once its loose object
// is gone (packed, say), it has the same entries.
func TestTreesReadOnceAreRemembered(t *testing.T) {
	rp, dir := testRepo(t)
	tree := plainGit(t, dir, nil, "", "rev-parse", "HEAD^{tree}")
	oid, err := hex.DecodeString(tree)
	require.NoError(t, err)
	first, ok := rp.Tree(oid)
	require.True(t, ok)
	require.Contains(t, first, "a.txt")
	require.NoError(t, os.Remove(filepath.Join(dir, ".git", "objects", tree[:2], tree[2:])))
	again, ok := rp.Tree(oid)
	require.True(t, ok, "the tree was read again")
	require.Equal(t, first, again)
}

// The cache of trees keeps to its bound, forgetting the oldest first, and
// does not keep a tree larger than an eighth of it.
func TestTreeCacheForgetsTheOldestFirst(t *testing.T) {
	var c treeCache
	size := maxCachedTrees / 8
	key := func(i int) []byte { return []byte(fmt.Sprintf("tree %d", i)) }
	for i := range 12 {
		c.put(key(i), map[string]TreeEntry{fmt.Sprint(i): {}}, size)
		require.LessOrEqual(t, c.size, maxCachedTrees)
	}
	for i := range 12 {
		_, ok := c.get(key(i))
		require.Equal(t, i >= 4, ok, "tree %d", i)
	}
	c.put(key(99), map[string]TreeEntry{}, size+1)
	_, ok := c.get(key(99))
	require.False(t, ok, "a tree over an eighth of the bound was kept")
	_, ok = c.get(key(4))
	require.True(t, ok, "a tree too large to keep made room anyway")
}
