package regfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/regfile"
)

// ReadInto reads into the buffer it is given when the file fits, and
// into new storage when it does not, with Read's answers either way.
func TestReadIntoReusesTheBufferItIsGiven(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small"), filepath.Join(dir, "large")
	require.NoError(t, os.WriteFile(small, []byte("12345"), 0o644))
	require.NoError(t, os.WriteFile(large, []byte(strings.Repeat("x", 5000)), 0o644))

	buf := make([]byte, 3, 4096)
	copy(buf, "old")
	data, err := regfile.ReadInto(buf, small, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
	assert.Equal(t, unsafe.SliceData(buf), unsafe.SliceData(data), "read into the buffer given")

	data, err = regfile.ReadInto(buf, large, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 5000), string(data))
	assert.NotEqual(t, unsafe.SliceData(buf), unsafe.SliceData(data), "too small: new storage")

	_, err = regfile.ReadInto(buf, large, 4999)
	assert.ErrorIs(t, err, regfile.ErrTooLarge)
	data, err = regfile.ReadInto(nil, small, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
}
