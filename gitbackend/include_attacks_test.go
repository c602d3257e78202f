package gitbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An agent's "git config core.excludesFile <FIFO>" (from its head, without
// a sandbox) hung the user's next grove new where a .worktreeinclude
// exists: the copy's ls-files read the excludes file.
func TestAnExcludesFileThatIsAFIFOHangsNoCreate(t *testing.T) {
	f := newFixture(t)
	plantIncludes(t, f, t.TempDir())
	fifo := filepath.Join(t.TempDir(), "excludes")
	mkfifo(t, fifo)
	f.git(f.repo, "config", "core.excludesFile", fifo)
	ctx, cancel := context.WithTimeout(f.ctx, 20*time.Second)
	defer cancel()
	h, err := f.ws.NewHead("agent").From("main").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.FileExists(t, filepath.Join(h.Info().Root, ".env"))
}

// A "*" an agent writes into info/exclude makes every file of the main
// checkout ignored there; the user's untracked files must still not be
// copied into heads just because .worktreeinclude names them.
func TestInfoExcludeMakesNoUserFileCopyable(t *testing.T) {
	f := newFixture(t)
	plantIncludes(t, f, t.TempDir())
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".git", "info", "exclude"), []byte("*\n"), 0o644))
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	assert.NoFileExists(t, filepath.Join(h.Info().Root, "not-ignored.txt"), "a file the checkout's .gitignore does not ignore was copied")
	assert.FileExists(t, filepath.Join(h.Info().Root, ".env"))
}
