//go:build linux || darwin

package gitfmt

import (
	"crypto/sha1"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What git records of a file's stat is what StatOf says and StatAt reads,
// in every index version; stat data and an assume-unchanged mark written
// in place (then resealed) are read back by git as written: an entry whose
// file is changed behind git's back is clean to git once it carries the
// file's stat data, and an assume-unchanged mark hides it, until cleared.
func TestStatDataWrittenInPlaceIsReadByGit(t *testing.T) {
	for _, v := range []string{"2", "3", "4"} {
		t.Run("version "+v, func(t *testing.T) {
			dir := t.TempDir()
			git := func(args ...string) string { t.Helper(); return plainGit(t, dir, nil, "", args...) }
			git("init", "-q")
			for _, name := range []string{"a.txt", "dir/b.txt", "dir/sub/a-longer-name-for-padding.txt"} {
				p := filepath.Join(dir, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(name), 0o644))
				// Written in the past: the index is not, so no entry is
				// racy (Debian's git counts whole seconds).
				past := time.Now().Add(-10 * time.Second)
				require.NoError(t, os.Chtimes(p, past, past))
			}
			git("add", "-A")
			git("update-index", "--index-version", v)
			index := filepath.Join(dir, ".git", "index")
			read := func() []byte {
				data, err := os.ReadFile(index)
				require.NoError(t, err)
				require.NoError(t, CheckIndex(data))
				return data
			}
			offs := map[string]int{}
			data := read()
			_, ok := WalkIndex(data, sha1.Size, func(e *RawEntry) {
				offs[string(e.Name)] = e.Off
				fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(string(e.Name))))
				require.NoError(t, err)
				want, ok := StatOf(fi)
				require.True(t, ok)
				assert.Equal(t, want, StatAt(data, e.Off), "%s: the stat data git recorded", e.Name)
			})
			require.True(t, ok)

			// A file git does not know changed: same size, new content.
			p := filepath.Join(dir, "dir", "b.txt")
			require.NoError(t, os.WriteFile(p, []byte("dir/B.txt"), 0o644))
			past := time.Now().Add(-5 * time.Second)
			require.NoError(t, os.Chtimes(p, past, past))
			require.Equal(t, "dir/b.txt", git("diff", "--name-only"), "control: git sees the change")
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			st, _ := StatOf(fi)
			data = read()
			PutStat(data, offs["dir/b.txt"], st)
			SetAssumeValid(data, offs["a.txt"], sha1.Size, true)
			Reseal(data, sha1.Size)
			require.NoError(t, os.WriteFile(index, data, 0o644))
			require.NoError(t, CheckIndex(read()))
			assert.Equal(t, "", git("diff", "--name-only"), "git takes the entry as its file's")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("A.txt"), 0o644))
			assert.Equal(t, "", git("diff", "--name-only"), "git does not look behind the mark")
			assert.Contains(t, "\n"+git("ls-files", "-v")+"\n", "\nh a.txt\n")

			data = read()
			SetAssumeValid(data, offs["a.txt"], sha1.Size, false)
			Reseal(data, sha1.Size)
			require.NoError(t, os.WriteFile(index, data, 0o644))
			assert.Equal(t, "a.txt", git("diff", "--name-only"), "with the mark cleared, git looks again")
		})
	}
}

func TestRacyIsGitsRule(t *testing.T) {
	written := time.Unix(1000, 500)
	assert.True(t, Stat{MtimeSec: 1000, MtimeNsec: 500}.Racy(written), "the same instant")
	assert.True(t, Stat{MtimeSec: 1001}.Racy(written), "later")
	assert.True(t, Stat{MtimeSec: 1000, MtimeNsec: 499}.Racy(written), "the same second")
	assert.False(t, Stat{MtimeSec: 999, MtimeNsec: 900}.Racy(written))
}

// A Sealer's checksum of an index edited in place is the whole content's,
// wherever the edits fall and whatever it was told the first edit was,
// in both hashes; one handed another buffer's length starts over.
func TestASealerHashesFromTheEditAsAWholeHashWould(t *testing.T) {
	for _, hashLen := range []int{sha1.Size, sha256.Size} {
		rng := rand.New(rand.NewPCG(1, uint64(hashLen)))
		data := make([]byte, 5*sealStride+1234)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		whole := func() []byte {
			h := NewHash(hashLen)
			h.Write(data[:len(data)-hashLen])
			return h.Sum(nil)
		}
		var s Sealer
		s.Reseal(data, hashLen, 0)
		require.Equal(t, whole(), data[len(data)-hashLen:])
		for range 40 {
			from := rng.IntN(len(data) - hashLen)
			for range 3 {
				data[from+rng.IntN(len(data)-hashLen-from)] ^= 0x5a
			}
			data[from] ^= 0xa5
			s.Reseal(data, hashLen, from)
			require.Equal(t, whole(), data[len(data)-hashLen:], "edited from %d", from)
		}
		short := data[:len(data)-sealStride]
		s.Reseal(short, hashLen, len(short)-hashLen-1)
		h := NewHash(hashLen)
		h.Write(short[:len(short)-hashLen])
		require.Equal(t, h.Sum(nil), short[len(short)-hashLen:])
	}
}
