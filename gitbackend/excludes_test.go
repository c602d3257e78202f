package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ignored means what the repository says — its .gitignore files and its
// info/exclude — and never a user's global excludes file, which would
// make one machine's checkpoints differ from another's.
func TestInfoExcludeIsHonouredAndAGlobalExcludesFileIsNot(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, ".git", "info", "exclude"), []byte("local-secret.txt\n"), 0o644))
	global := filepath.Join(t.TempDir(), "global-excludes")
	require.NoError(t, os.WriteFile(global, []byte("*.mine\n"), 0o644))
	f.git(f.repo, "config", "core.excludesFile", global)

	h := f.head("excl")
	f.write(h, "local-secret.txt", "s\n")
	f.write(h, "notes.mine", "m\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	files := f.git(f.repo, "ls-tree", "-r", "--name-only", string(cp.ID))
	assert.NotContains(t, files, "local-secret.txt", "info/exclude did not apply")
	assert.Contains(t, files, "notes.mine", "a global excludes file decided what a checkpoint holds")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "status after the checkpoint: %+v", st.Changes)
}
