//go:build unix

// On Unix a FIFO can be planted where a regular file is expected; the test
// needs one, so it runs only there.

package regfile_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/regfile"
)

func TestReadRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, err := regfile.Read(fifo, 0) // os.ReadFile would block here forever
	assert.ErrorIs(t, err, regfile.ErrNotRegular)
	_, err = regfile.Read(dir, 0)
	assert.ErrorIs(t, err, regfile.ErrNotRegular)
	_, err = regfile.Read(filepath.Join(dir, "missing"), 0)
	assert.ErrorIs(t, err, fs.ErrNotExist)

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("12345"), 0o644))
	require.NoError(t, os.Symlink(file, filepath.Join(dir, "link")))
	data, err := regfile.Read(filepath.Join(dir, "link"), 5)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
	_, err = regfile.Read(file, 4)
	assert.ErrorIs(t, err, regfile.ErrTooLarge)
}
