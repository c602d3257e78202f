package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// Paths cross to git NUL-separated, so a name with a newline is one name:
// an ignored file named "a\nb.log" whose content differs from what the
// target tracks there is a Conflict, and stays as it was.
func TestAnIgnoredFileWithANewlineInItsNameIsAConflictNotOverwritten(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	name := "a\nb.log" // *.log is ignored
	f.write(h, "a", "decoy a\n")
	f.write(h, "b.log", "decoy b\n")
	f.write(h, name, "tracked\n")
	cp, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Include: []string{name}})
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	f.write(h, "a", "tracked\n") // the decoys hold what the target has
	f.write(h, "b.log", "tracked\n")
	f.write(h, name, "the agent's ignored file\n")

	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
	assert.Equal(t, grove.Conflict, grove.CodeOf(err), "restore over an ignored file with a newline in its name: %v", err)
	data, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	assert.Equal(t, "the agent's ignored file\n", string(data), "the ignored file was overwritten")
}

// The files a restore keeps because they are ignored now are named to git
// as patterns matching exactly them, whatever characters their names hold.
func TestIgnoredFilesWithAnyNameSurviveARestoreThatUnignoresThem(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	base, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	// The target's rules do not ignore *.tmp; the head's rules now do.
	f.write(h, ".gitignore", "ignored/\n*.log\n*.tmp*\n")
	names := []string{"a.tmp", "star*.tmp", "q?.tmp", "[br].tmp", `back\slash.tmp`, "trailing .tmp ", "new\nline.tmp", "#hash.tmp", "!bang.tmp", "dir/deep.tmp"}
	for _, n := range names {
		f.write(h, n, "kept "+n)
	}
	f.write(h, "plain.txt", "an untracked file the clean may remove after the safety checkpoint\n")
	_, err = h.Restore(f.ctx, grove.Rev(base.ID), nil)
	require.NoError(t, err)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(h.Info().Root, filepath.FromSlash(n)))
		require.NoError(t, err, "the restore deleted the ignored file %q", n)
		assert.Equal(t, "kept "+n, string(data))
	}
	_, err = os.Stat(filepath.Join(h.Info().Root, "plain.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "an untracked, unignored file stays after restore")
}
