package gitbackend_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// A restore without Discard never deletes a file its safety checkpoint
// could not hold (over the size cap): it fails, FailedPrecondition, and
// the file stays, as Destroy does.
func TestARestoreRefusesToLoseAFileOverTheCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "big.bin", strings.Repeat("x", 100))
	_, err := h.Restore(f.ctx, "main", &workspace.RestoreOptions{Checkpoint: workspace.CheckpointOptions{MaxNewFileSize: 10}})
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.ErrorContains(t, err, "big.bin")
	assert.FileExists(t, filepath.Join(h.Info().Root, "big.bin"))
	_, err = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(h.Info().Root, "big.bin"))
}
