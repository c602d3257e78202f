//go:build linux

package headcopy

import (
	"context"
	"crypto/sha1"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/gitfmt"
)

// blobSum is the SHA-1 object ID of a blob holding content.
func blobSum(content string) []byte {
	s := sha1.Sum(fmt.Appendf(nil, "blob %d\x00%s", len(content), content))
	return s[:]
}

// Files copies only what hashes to the blob an entry names — never
// the file (or link) the source holds in its place — and marks that entry
// alone copied, with its copy's stat data.
func TestCopyFilesHashesWhatItCopies(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "d", "good"), []byte("good\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "d", "swapped"), []byte("evil\n"), 0o644))
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(src, "d", "link")))
	require.NoError(t, os.WriteFile(filepath.Join(src, "d", "run"), []byte("#!/bin/sh\n"), 0o644))
	files := []Entry{
		{mode: 0o100644, oid: blobSum("good\n"), path: "d/good"},
		{mode: 0o120000, oid: blobSum("target"), path: "d/link"},
		{mode: 0o100755, oid: blobSum("#!/bin/sh\n"), path: "d/run"},
		{mode: 0o100644, oid: blobSum("good\n"), path: "d/swapped"},
	}
	n, err := Files(context.Background(), src, dst, files, sha1.Size)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	got, err := os.ReadFile(filepath.Join(dst, "d", "good"))
	require.NoError(t, err)
	require.Equal(t, "good\n", string(got))
	fi, err := os.Stat(filepath.Join(dst, "d", "run"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&0o100, "the entry's mode, not the source's")
	require.True(t, files[2].copied)
	require.Equal(t, uint32(fi.Sys().(*syscall.Stat_t).Ino), files[2].st.Ino)
	require.Equal(t, uint32(fi.Size()), files[2].st.Size)
	for _, p := range []string{"d/link", "d/swapped"} {
		_, err := os.Lstat(filepath.Join(dst, p))
		require.ErrorIs(t, err, os.ErrNotExist, p)
	}
	require.True(t, files[0].copied)
	require.False(t, files[1].copied)
	require.False(t, files[3].copied)
	require.Equal(t, gitfmt.Stat{}, files[1].st)
	require.Equal(t, gitfmt.Stat{}, files[3].st)
}

// A file over maxCopySize is left to the checkout, even when it is its
// blob: an agent can make a sparse file of any size for nothing, and the
// copy would write all of it.
func TestCopyFilesLeavesLargeFiles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	f, err := os.Create(filepath.Join(src, "big"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxCopySize+1))
	require.NoError(t, f.Close())
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", maxCopySize+1)
	h.Write(make([]byte, maxCopySize+1))
	files := []Entry{{mode: 0o100644, oid: h.Sum(nil), path: "big"}}
	n, err := Files(context.Background(), src, dst, files, sha1.Size)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = os.Lstat(filepath.Join(dst, "big"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
