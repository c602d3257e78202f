package gitcmd_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/gitcmd"
)

// What a file's bytes are, and whether it is an LFS file, is decided by the
// tree's attributes and the repository's info/attributes alone: the user's
// own attributes file (git reads $XDG_CONFIG_HOME/git/attributes even with
// no global configuration) does not change what grove captures.
func TestTheUsersAttributesFileIsNotRead(t *testing.T) {
	home := isolateHome(t)
	r := newRunner(t)
	dir := initRepo(t, r)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".config", "git", "attributes"), []byte("*.txt filter=lfs\n"), 0o644))

	plain := exec.Command("git", "check-attr", "filter", "--", "a.txt")
	plain.Dir = dir
	out, err := plain.Output()
	require.NoError(t, err)
	require.Equal(t, "a.txt: filter: lfs\n", string(out), "control: plain git reads the user's attributes file")

	got, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"check-attr", "filter", "--", "a.txt"}})
	require.NoError(t, err)
	assert.Equal(t, "a.txt: filter: unspecified", got)
}
