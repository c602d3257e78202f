package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/workspace"
)

// An agent replaces a tracked directory with a symlink to a directory
// outside the head that holds files of the same names. Restore puts the
// real directory back and writes nothing through the link; a checkpoint
// records the symlink, never the outside files.
func TestATrackedDirectoryReplacedByASymlinkOutIsRestoredWithoutWritingThroughIt(t *testing.T) {
	for _, discard := range []bool{false, true} {
		f := newFixture(t)
		h := f.head("agent")
		root := h.Info().Root
		outside, unchanged := outsideTree(t) // holds src/main.go, like the head
		require.NoError(t, os.RemoveAll(filepath.Join(root, "src")))
		require.NoError(t, os.Symlink(filepath.Join(outside, "src"), filepath.Join(root, "src")))

		_, err := h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: discard})
		require.NoError(t, err, "restore (discard %v)", discard)
		unchanged()
		fi, err := os.Lstat(filepath.Join(root, "src"))
		require.NoError(t, err)
		assert.True(t, fi.IsDir(), "src is a real directory again")
		data, err := os.ReadFile(filepath.Join(root, "src", "main.go"))
		require.NoError(t, err)
		assert.Equal(t, "package main\n", string(data))
		assert.Empty(t, f.git(root, "status", "--porcelain"))
	}
}
