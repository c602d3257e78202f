package gitfmt

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Has answers what git cat-file -e answers, for loose objects, packed
// ones (many packs, SHA-1 and SHA-256, every first byte of the fan-out)
// and absent ones, and refuses an index that is not one.
func TestHasIsWhatGitHolds(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			plainGit(t, dir, nil, "", "init", "-q", "--object-format="+format)
			var ids []string
			files := t.TempDir()
			for pack := 0; pack < 3; pack++ {
				var paths strings.Builder
				for i := 0; i < 200; i++ {
					p := filepath.Join(files, fmt.Sprintf("%d-%d", pack, i))
					require.NoError(t, os.WriteFile(p, []byte(p), 0o644))
					paths.WriteString(p + "\n")
				}
				batch := strings.Fields(plainGit(t, dir, nil, paths.String(), "hash-object", "-w", "--stdin-paths"))
				ids = append(ids, batch...)
				if pack < 2 { // the last batch stays loose
					plainGit(t, dir, nil, strings.Join(batch, "\n")+"\n", "pack-objects", "-q", ".git/objects/pack/pack")
					plainGit(t, dir, nil, "", "prune-packed")
				}
			}
			packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
			require.Len(t, packs, 2)
			s := NewStore(filepath.Join(dir, ".git"), nil)
			for _, id := range ids {
				ok, err := s.Has(id)
				require.NoError(t, err)
				require.True(t, ok, id)
			}
			absent := plainGit(t, dir, nil, "not written", "hash-object", "--stdin")
			for _, id := range []string{absent, strings.Repeat("0", len(absent)), strings.Repeat("f", len(absent))} {
				ok, err := s.Has(id)
				require.NoError(t, err)
				require.False(t, ok, id)
			}
			_, err := s.Has("xyz")
			require.Error(t, err)

			// A promisor pack makes a partial clone.
			require.False(t, s.Promised())
			require.NoError(t, os.WriteFile(strings.TrimSuffix(packs[1], ".idx")+".promisor", nil, 0o444))
			require.True(t, s.Promised())

			// An index that is not one is an error, never "absent".
			require.NoError(t, os.Chmod(packs[0], 0o644))
			require.NoError(t, os.WriteFile(packs[0], []byte("not an index"), 0o644))
			future := time.Now().Add(time.Hour) // the directory's time tells the cache
			require.NoError(t, os.Chtimes(filepath.Dir(packs[0]), future, future))
			_, err = s.Has(absent)
			require.ErrorContains(t, err, "version-2")
		})
	}
}

// A pack a repack removed between the listing of the pack directory and
// the opening of its index makes Has list the directory again, never fail.
func TestHasLooksAgainWhenARepackRemovedAPack(t *testing.T) {
	s, dir := testRepo(t)
	plainGit(t, dir, nil, "", "repack", "-q", "-a", "-d")
	id := plainGit(t, dir, nil, "", "rev-parse", "HEAD:a.txt")
	require.False(t, s.Promised()) // lists the pack directory
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	fi, err := os.Stat(packDir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644))
	plainGit(t, dir, nil, "", "add", "b.txt")
	plainGit(t, dir, []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x"}, "", "commit", "-qm", "two")
	plainGit(t, dir, nil, "", "repack", "-q", "-a", "-d") // a new pack; the listed one is gone
	require.NoError(t, os.Chtimes(packDir, fi.ModTime(), fi.ModTime()))
	ok, err := s.Has(id)
	require.NoError(t, err)
	assert.True(t, ok)
}

// An index an agent planted, as large as it likes (a sparse file claiming
// 76 million objects), costs Has a few reads: not its size in memory.
func TestAPlantedHugeIndexCostsAFewReads(t *testing.T) {
	s, dir := testRepo(t)
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	require.NoError(t, os.WriteFile(filepath.Join(packDir, "pack-evil.pack"), nil, 0o644))
	const n = 76_000_000
	head := []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}
	for i := 0; i < 256; i++ {
		head = binary.BigEndian.AppendUint32(head, n)
	}
	f, err := os.Create(filepath.Join(packDir, "pack-evil.idx"))
	require.NoError(t, err)
	_, err = f.Write(head)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(len(head))+n*28+40)) // a hole: no disk
	require.NoError(t, f.Close())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ok, err := s.Has(strings.Repeat("ab", 20))
	require.NoError(t, err)
	assert.False(t, ok)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated by one lookup")
}
