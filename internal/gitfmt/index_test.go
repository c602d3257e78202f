package gitfmt

import (
	"crypto/sha1"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// readMarks reads index versions 2, 3 and 4 as git writes them.
func TestGitlinksReadsEveryIndexVersion(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) { t.Helper(); plainGit(t, dir, nil, "", args...) }
	git("init", "-q")
	for _, name := range []string{"a.txt", "dir/b.txt", "dir/sub/a-longer-name-for-padding.txt", "z.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	const commit = "1234567890123456789012345678901234567890"
	git("update-index", "--add", "--cacheinfo", "160000,"+commit+",dir/nested")
	git("update-index", "--add", "--cacheinfo", "160000,"+commit+",m-nested")
	for _, v := range []string{"2", "3", "4"} {
		git("update-index", "--index-version", v)
		if v == "3" {
			git("update-index", "--skip-worktree", "z.txt") // an extended flag
		}
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckIndex(data); err != nil {
			t.Fatalf("version %s: CheckIndex: %v", v, err)
		}
		marks, ok := readMarks(data, sha1.Size)
		links := marks.Gitlinks
		if !ok || len(links) != 2 || links[0] != "dir/nested" || links[1] != "m-nested" {
			t.Errorf("version %s: gitlinks = %q, %v; want [dir/nested m-nested]", v, links, ok)
		}
	}
}

// FuzzReadMarks: whatever bytes an index holds, reading its marks never
// panics (an agent can write its head's index, checksum and all).
func FuzzReadMarks(f *testing.F) {
	entry := func(mode uint32, flags uint16, name []byte) []byte {
		e := make([]byte, 40+20+2)
		binary.BigEndian.PutUint32(e[24:], mode)
		binary.BigEndian.PutUint16(e[60:], flags)
		return append(e, name...)
	}
	v4 := append([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02"), entry(0o100644, 3, []byte("\x00abc\x00"))...)
	v4 = append(v4, entry(0o160000, 3, []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7fxyz\x00"))...) // a strip count that overflows
	f.Add(append(v4, make([]byte, 20)...), 20)
	v2 := append([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), entry(0o160000, 0x8003, []byte("sub\x00\x00\x00"))...)
	f.Add(append(v2, make([]byte, 20)...), 20)
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x02"), 32)
	f.Fuzz(func(t *testing.T, data []byte, hashLen int) {
		if hashLen != 20 && hashLen != 32 {
			hashLen = 20
		}
		_, _ = readMarks(data, hashLen)
	})
}

// A Buffer goes to one taker at a time, and keeps the
// largest storage handed back, within its bound.
func TestIndexBufferGoesToOneTakerAtATime(t *testing.T) {
	var k Buffer
	k.Put(make([]byte, 10, 100))
	b := k.Get()
	require.Equal(t, 0, len(b))
	require.Equal(t, 100, cap(b))
	require.Nil(t, k.Get(), "taken: the next taker reads into fresh memory")
	k.Put(make([]byte, 0, 50))
	k.Put(b)
	k.Put(make([]byte, 0, 70))
	require.Equal(t, 100, cap(k.Get()), "the largest is kept")
	k.Put(make([]byte, 0, maxKeptIndexBuf+1))
	require.Nil(t, k.Get(), "over the bound: not kept")
}

// An index whose trailer is all zeros (git's index.skipHash) has no
// checksum to vouch for it: it passes only when its entries and extensions
// parse whole and in git's order. A damaged index that happens to end in
// zeros (a truncation inside an entry's zero stat fields, say) is
// ErrDamagedIndex, never handed to git, which would write its garbage as
// unsorted trees.
func TestAZeroTrailerVouchesForNothing(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) { t.Helper(); plainGit(t, dir, nil, "", args...) }
	git("init", "-q")
	for _, name := range []string{"a.txt", "b/c.txt", "d.txt", "e/f/g.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
	}
	git("add", "-A")
	git("write-tree") // a cache-tree extension
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	require.NoError(t, err)
	require.NoError(t, CheckIndex(data))
	zero := make([]byte, sha1.Size)

	skip := append(append([]byte{}, data[:len(data)-sha1.Size]...), zero...)
	require.NoError(t, CheckIndex(skip), "a whole index written with index.skipHash")

	entriesEnd, ok := WalkIndex(data, sha1.Size, func(*RawEntry) {})
	require.True(t, ok)
	for cut := 13; cut < len(data)-sha1.Size; cut += 7 {
		if cut == entriesEnd {
			continue // every entry and no extension: a whole index still
		}
		damaged := append(append([]byte{}, data[:cut]...), zero...)
		require.ErrorIs(t, CheckIndex(damaged), ErrDamagedIndex, "cut at %d of %d, then zeros", cut, len(data))
	}
	swapped := append([]byte{}, skip...)
	// The first entry's name's first byte made greater than the next's:
	// out of git's order.
	swapped[12+62] = 'z'
	require.ErrorIs(t, CheckIndex(swapped), ErrDamagedIndex, "entries out of order")
}

// DropExtension takes the untracked cache out of an index git wrote and
// leaves an index git reads as the same, without it.
func TestDropExtension(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string { t.Helper(); return plainGit(t, dir, nil, "", args...) }
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("-c", "core.untrackedCache=true", "status", "--porcelain")
	git("-c", "core.untrackedCache=true", "update-index", "--untracked-cache")
	path := filepath.Join(dir, ".git", "index")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	extOff, ok := WalkIndex(data, sha1.Size, func(*RawEntry) {})
	if !ok || !containsExt(data[extOff:], "UNTR") {
		t.Fatalf("git wrote no untracked cache: %v", ok)
	}
	out, ok := DropExtension(data, extOff, sha1.Size, "UNTR")
	if !ok || containsExt(out[extOff:], "UNTR") || len(out) >= len(data) {
		t.Fatalf("DropExtension: %v, %d bytes of %d", ok, len(out), len(data))
	}
	if err := CheckIndex(out); err != nil {
		t.Fatal(err)
	}
	before := git("ls-files", "-s", "--debug")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if after := git("ls-files", "-s", "--debug"); after != before {
		t.Fatalf("the entries changed:\n%s\n%s", before, after)
	}
	// Extensions that do not parse are not guessed at.
	if _, ok := DropExtension(data[:len(data)-30], extOff, sha1.Size, "UNTR"); ok {
		t.Fatal("a cut index was taken apart")
	}
}

func containsExt(ext []byte, sig string) bool {
	for off := 0; off+8 <= len(ext)-sha1.Size; {
		if string(ext[off:off+4]) == sig {
			return true
		}
		off += 8 + int(binary.BigEndian.Uint32(ext[off+4:]))
	}
	return false
}
