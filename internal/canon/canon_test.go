package canon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPathResolvesTheExistingPrefixOnly(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")))

	got, err := Path(filepath.Join(dir, "link", "not", "yet"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "real", "not", "yet"), got)

	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	_, err = Path(filepath.Join(dir, "loop", "x"))
	assert.Error(t, err, "a symlink loop is an error, not a path")

	assert.True(t, Within(filepath.Join(dir, "link", "a"), filepath.Join(dir, "real")))
	assert.True(t, Within(filepath.Join(dir, "real"), filepath.Join(dir, "link")))
	assert.False(t, Within(filepath.Join(dir, "realm"), filepath.Join(dir, "real")), "a sibling with a longer name")
	assert.False(t, Within(filepath.Join(dir, "loop", "x"), dir))
}
