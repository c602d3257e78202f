package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

	_, err = h.Restore(f.ctx, workspace.Rev(cp.ID), nil)
	assert.Equal(t, workspace.Conflict, workspace.CodeOf(err), "restore over an ignored file with a newline in its name: %v", err)
	data, err := os.ReadFile(filepath.Join(root, name))
	require.NoError(t, err)
	assert.Equal(t, "the agent's ignored file\n", string(data), "the ignored file was overwritten")
}
