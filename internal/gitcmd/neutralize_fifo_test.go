//go:build unix

// On Unix a FIFO can be planted where git would read a configuration file.

package gitcmd

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanRefusesAFIFOGitWouldBlockOn(t *testing.T) {
	r := testRunner(t)
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[include]\n\tpath = fifo\n"), 0o644))
	require.ErrorIs(t, r.scanConfig(context.Background(), dir, dir).err, ErrConfigRefused)
}
