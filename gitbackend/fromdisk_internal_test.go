//go:build linux

package gitbackend

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/stretchr/testify/require"
)

// The private index is a new file: a symlink an agent plants at its name
// (in the head's git dir, between grove's removal of the old one and the
// copy) is never written through.
func TestCopyIndexNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("the orchestrator's\n"), 0o600))
	dst := filepath.Join(t.TempDir(), "index.grove")
	require.NoError(t, os.Symlink(victim, dst))
	_, err := copyIndex(new(gitfmt.Buffer), filepath.Join(dir, ".git", "index"), dst)
	require.Error(t, err)
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "the orchestrator's\n", string(data))
}
