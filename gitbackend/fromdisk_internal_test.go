//go:build linux

package gitbackend

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
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

// A watched head's kept index is taken only while the file is the one it
// was kept for: not once it was written in place (its time moves), nor
// once another file was renamed over it; a link to it (a status poll's)
// changes nothing.
func TestAKeptIndexIsTakenOnlyForTheSameFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "index")
	require.NoError(t, os.WriteFile(p, []byte("grove's index"), 0o644))
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	ws := &watchState{}
	require.True(t, ws.keepIndex(p, regfile.Inode(fi), []byte("grove's index"), new(gitfmt.Sealer)))
	require.NoError(t, os.Link(p, filepath.Join(dir, "polled")))
	data, seal := ws.takeIndex(p)
	require.Equal(t, "grove's index", string(data), "a link is no change")
	require.NotNil(t, seal)
	data, _ = ws.takeIndex(p)
	require.Nil(t, data, "taken once")

	require.True(t, ws.keepIndex(p, regfile.Inode(fi), []byte("grove's index"), new(gitfmt.Sealer)))
	time.Sleep(10 * time.Millisecond) // a time the clock can tell apart
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("agent"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	data, _ = ws.takeIndex(p)
	require.Nil(t, data, "an edit in place is not grove's index")

	same, err := os.Lstat(p)
	require.NoError(t, err)
	require.True(t, ws.keepIndex(p, regfile.Inode(same), []byte("grove's index"), new(gitfmt.Sealer)))
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("agent's index"), 0o644))
	require.NoError(t, os.Rename(other, p))
	data, _ = ws.takeIndex(p)
	require.Nil(t, data, "another file is not grove's index")
	require.False(t, ws.keepIndex(p, regfile.Inode(same), []byte("grove's index"), new(gitfmt.Sealer)), "nor kept as it")
	data, _ = (*watchState)(nil).takeIndex(p)
	require.Nil(t, data, "an unwatched head keeps nothing")
}
