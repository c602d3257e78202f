package rootfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
)

func open(t *testing.T, dir string, o Options) *FS {
	t.Helper()
	fsys, err := Open(dir, o)
	require.NoError(t, err)
	t.Cleanup(fsys.Close)
	return fsys
}

// What holds for every FS, a head's or a root's: nothing outside the
// directory and nothing of its .git is reachable, by name or by link; a
// read-only FS refuses every write, naming why, and reads as any other.
func TestAnFSReachesOnlyItsDirectory(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink(".git", filepath.Join(dir, "git")))

	fsys := open(t, dir, Options{Op: "test", Key: dir, CASLock: filepath.Join(t.TempDir(), "cas")})
	for name, code := range map[string]grove.Code{
		"../x": grove.PathEscape, "out/secret": grove.PathEscape,
		".git/config": grove.PermissionDenied, "git/config": grove.PermissionDenied,
	} {
		_, err := fsys.ReadFile(name)
		assert.Equal(t, code, grove.CodeOf(err), name)
		err = fsys.WriteFile(name, []byte("x"), 0o644)
		assert.Equal(t, code, grove.CodeOf(err), name)
	}
	assert.Equal(t, grove.PathEscape, grove.CodeOf(fsys.Symlink("../..", "up")))
	assert.Equal(t, grove.PermissionDenied, grove.CodeOf(fsys.Symlink(".git/hooks", "hooks")))
	ents, err := fsys.ReadDir(".")
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotEqual(t, ".git", e.Name())
	}

	ro := open(t, dir, Options{Op: "test", Key: dir + "-ro", ReadOnly: "mounted read-only"})
	data, err := ro.ReadFile("a.txt")
	require.NoError(t, err)
	assert.Equal(t, "a", string(data))
	for name, write := range map[string]func() error{
		"writefile":   func() error { return ro.WriteFile("a.txt", nil, 0o644) },
		"writefileif": func() error { return ro.WriteFileIf("a.txt", nil, 0o644, grove.DigestOf([]byte("a"))) },
		"mkdirall":    func() error { return ro.MkdirAll("d", 0o755) },
		"remove":      func() error { return ro.Remove("a.txt") },
		"rename":      func() error { return ro.Rename("a.txt", "b.txt") },
		"symlink":     func() error { return ro.Symlink("a.txt", "l") },
		"chmod":       func() error { return ro.Chmod("a.txt", 0o600) },
	} {
		err := write()
		assert.Equal(t, grove.PermissionDenied, grove.CodeOf(err), name)
		assert.ErrorContains(t, err, "mounted read-only", name)
	}
	assert.FileExists(t, filepath.Join(dir, "a.txt"))
}

// The locks FSes of one key share go with the last of them.
func TestSharedLocksGoWithTheirLastFS(t *testing.T) {
	before := SharedLocks()
	dir := t.TempDir()
	a, err := Open(dir, Options{Key: "k"})
	require.NoError(t, err)
	b, err := Open(dir, Options{Key: "k"})
	require.NoError(t, err)
	assert.Equal(t, before+1, SharedLocks())
	a.Close()
	assert.Equal(t, before+1, SharedLocks())
	b.Close()
	assert.Equal(t, before, SharedLocks())
}
