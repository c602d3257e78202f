package lfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// git runs the real git (and git-lfs, which .ci/run installs) in dir, as
// a user would, with no outside configuration but git-lfs's filters.
func git(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "XDG_CONFIG_HOME="+dir,
		"GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "git %v: %s", args, stderr.String())
	return string(out)
}

// lfsRepo is a repository set up by the real git lfs, with one tracked
// file committed.
func lfsRepo(t *testing.T) (dir string, content []byte) {
	t.Helper()
	dir = t.TempDir()
	git(t, dir, "", "init", "-q", "-b", "main")
	git(t, dir, "", "lfs", "install", "--local")
	git(t, dir, "", "lfs", "track", "*.bin")
	content = bytes.Repeat([]byte("large content\n"), 5000)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.bin"), content, 0o644))
	git(t, dir, "", "add", ".gitattributes", "a.bin")
	git(t, dir, "", "commit", "-qm", "lfs")
	return dir, content
}

// What git lfs writes, grove reads: the committed blob parses to the
// pointer git lfs pointer prints, the store holds its object where Path
// says, and WriteFile gives back the content.
func TestGroveReadsWhatGitLFSWrites(t *testing.T) {
	dir, content := lfsRepo(t)
	blob := git(t, dir, "", "cat-file", "blob", "HEAD:a.bin")
	p, err := Parse([]byte(blob))
	require.NoError(t, err)
	assert.Equal(t, int64(len(content)), p.Size)
	assert.Equal(t, blob, string(p.Bytes()), "the bytes git lfs wrote, byte for byte")
	assert.Equal(t, blob, git(t, dir, "", "lfs", "pointer", "--file=a.bin"))

	s := StoreOf(filepath.Join(dir, ".git"))
	assert.True(t, s.Has(p))
	dst := filepath.Join(t.TempDir(), "out.bin")
	require.NoError(t, s.WriteFile(p, dst, 0o644))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, content, got)
}

// What grove writes, git lfs reads: an object Put into the store and its
// pointer committed pass git lfs fsck, and git lfs smudges the content
// back out of the store.
func TestGitLFSReadsWhatGroveWrites(t *testing.T) {
	dir, _ := lfsRepo(t)
	content := []byte(strings.Repeat("written by grove\n", 3000))
	s := StoreOf(filepath.Join(dir, ".git"))
	p, err := s.Put(bytes.NewReader(content))
	require.NoError(t, err)
	again, err := s.Put(bytes.NewReader(content))
	require.NoError(t, err)
	assert.Equal(t, p, again, "an object is named by its content")
	blob := strings.TrimSpace(git(t, dir, string(p.Bytes()), "hash-object", "-w", "--stdin"))
	git(t, dir, "", "update-index", "--add", "--cacheinfo", "100644,"+blob+",b.bin")
	git(t, dir, "", "commit", "-qm", "grove's")
	assert.Contains(t, git(t, dir, "", "lfs", "fsck"), "Git LFS fsck OK")
	assert.Contains(t, git(t, dir, "", "lfs", "ls-files"), "b.bin")
	git(t, dir, "", "checkout", "--", "b.bin") // git lfs's smudge, from the store
	got, err := os.ReadFile(filepath.Join(dir, "b.bin"))
	require.NoError(t, err)
	assert.Equal(t, content, got)
	tmp, err := os.ReadDir(filepath.Join(dir, ".git", "lfs", "tmp"))
	require.NoError(t, err)
	assert.Empty(t, tmp, "Put leaves no temporary file")
}

// Only what git lfs writes is a pointer: anything else is a file.
func TestParseTakesOnlyPointers(t *testing.T) {
	oid := strings.Repeat("ab", 32)
	good := Version + "\noid sha256:" + oid + "\nsize 12\n"
	p, err := Parse([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, Pointer{OID: oid, Size: 12}, p)
	for name, bad := range map[string]string{
		"no final line feed": strings.TrimSuffix(good, "\n"),
		"CRLF":               strings.ReplaceAll(good, "\n", "\r\n"),
		"another version":    strings.Replace(good, "v1", "v2", 1),
		"upper-case hex":     strings.Replace(good, oid, strings.ToUpper(oid), 1),
		"short oid":          strings.Replace(good, oid, oid[:63], 1),
		"sha1":               strings.Replace(good, "sha256:"+oid, "sha1:"+oid[:40], 1),
		"negative size":      strings.Replace(good, "size 12", "size -12", 1),
		"leading zero":       strings.Replace(good, "size 12", "size 012", 1),
		"keys out of order":  Version + "\nsize 12\noid sha256:" + oid + "\n",
		"an extension":       Version + "\next-0-foo sha256:" + oid + "\noid sha256:" + oid + "\nsize 12\n",
		"trailing text":      good + "x\n",
		"too large":          good + strings.Repeat(" ", MaxPointerSize),
		"empty":              "",
	} {
		_, err := Parse([]byte(bad))
		assert.ErrorIs(t, err, ErrNotPointer, name)
	}
}

// An object is hostile input (an agent can write the store): a link, a
// FIFO, a wrong size or wrong content is ErrCorrupt, a missing object
// ErrMissing, and no file is left at the destination.
func TestWriteFileChecksTheObject(t *testing.T) {
	common := t.TempDir()
	s := StoreOf(common)
	p, err := s.Put(strings.NewReader("the real content\n"))
	require.NoError(t, err)
	out := t.TempDir()
	_, err = os.Stat(filepath.Join(out, "x"))
	require.True(t, errors.Is(err, os.ErrNotExist))

	missing := Pointer{OID: strings.Repeat("0", 64), Size: 1}
	assert.ErrorIs(t, s.WriteFile(missing, filepath.Join(out, "missing"), 0o644), ErrMissing)

	path := s.Path(p)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("the real content\n"), 0o600))
	for name, plant := range map[string]func(){
		"wrong content": func() { require.NoError(t, os.WriteFile(path, []byte("the fake content\n"), 0o644)) },
		"wrong size":    func() { require.NoError(t, os.WriteFile(path, []byte("short\n"), 0o644)) },
		"a link":        func() { require.NoError(t, os.Symlink(secret, path)) },
		"a FIFO":        func() { require.NoError(t, mkfifo(path)) },
	} {
		require.NoError(t, os.RemoveAll(path))
		plant()
		dst := filepath.Join(out, strings.ReplaceAll(name, " ", "-"))
		assert.ErrorIs(t, s.WriteFile(p, dst, 0o644), ErrCorrupt, name)
		assert.NoFileExists(t, dst, name)
	}
}

// PutFile stores a file's content under its name, and a corrupt object an
// agent planted under that name is replaced by the checked content.
func TestPutFileStoresCheckedContentOverAPlantedObject(t *testing.T) {
	common := t.TempDir()
	s := StoreOf(common)
	content := []byte(strings.Repeat("content of a large file\n", 4000))
	src := filepath.Join(t.TempDir(), "big.bin")
	require.NoError(t, os.WriteFile(src, content, 0o644))
	p, err := s.Put(bytes.NewReader(content))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.Path(p), bytes.Repeat([]byte("x"), len(content)), 0o644), "the agent's object, of the right size")

	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	got, err := s.PutFile(f)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	stored, err := os.ReadFile(s.Path(p))
	require.NoError(t, err)
	assert.Equal(t, content, stored)
}

// A link an agent put where the store's directories are leads nowhere
// outside the repository: nothing is written or read there.
func TestAttackALinkedStoreDirectoryLeadsNowhere(t *testing.T) {
	for _, link := range []string{"lfs", "lfs/objects", "lfs/tmp"} {
		t.Run(link, func(t *testing.T) {
			common, outside := t.TempDir(), t.TempDir()
			s := StoreOf(common)
			p, err := StoreOf(outside).Put(strings.NewReader("outside\n"))
			require.NoError(t, err)
			full := filepath.Join(common, filepath.FromSlash(link))
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			target := filepath.Join(outside, filepath.FromSlash(link))
			require.NoError(t, os.MkdirAll(target, 0o755))
			require.NoError(t, os.Symlink(target, full))
			before := listTree(t, outside)

			_, err = s.Put(strings.NewReader("new content\n"))
			assert.Error(t, err)
			assert.Equal(t, before, listTree(t, outside), "a Put wrote outside the repository")
			if link != "lfs/tmp" {
				assert.False(t, s.Has(p), "Has looked outside the repository")
				out, err := os.CreateTemp(t.TempDir(), "out")
				require.NoError(t, err)
				_, err = s.WriteTo(p, out)
				assert.Error(t, err, "WriteTo read outside the repository")
				_ = out.Close()
			}
		})
	}
}

// listTree is every path under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return err
	}))
	return out
}

func TestHoldsComparesSizeAndHash(t *testing.T) {
	data := []byte("some content\n")
	sum := sha256.Sum256(data)
	p := Pointer{OID: hex.EncodeToString(sum[:]), Size: int64(len(data))}
	for _, c := range []struct {
		r    string
		want bool
	}{{string(data), true}, {string(data) + "x", false}, {string(data[:5]), false}, {"other content\n", false}} {
		ok, err := p.Holds(strings.NewReader(c.r))
		require.NoError(t, err)
		assert.Equal(t, c.want, ok, "%q", c.r)
	}
}
