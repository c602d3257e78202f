package workspace_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

// A restore to a revision that does not resolve, or a fork to a name that
// is taken, fails before the head is checkpointed: the failed call leaves
// the head as it was, with no checkpoint added.
func TestAFailedRestoreOrForkTakesNoCheckpoint(t *testing.T) {
	ctx := context.Background()
	store := memorybackend.NewStore()
	_, err := store.Init("demo", fstest.MapFS{"a.txt": {Data: []byte("a\n")}})
	require.NoError(t, err)
	ws, err := workspace.Open(ctx, memorybackend.New(memorybackend.Options{Store: store}), "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("h").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	other, err := ws.NewHead("taken").Create(ctx)
	require.NoError(t, err)
	require.NoError(t, other.Close())
	require.NoError(t, h.FS().WriteFile("wip.txt", []byte("work\n"), 0o644))
	before, err := h.Status(ctx)
	require.NoError(t, err)

	_, err = h.Restore(ctx, "no-such-revision", nil)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "error: %v", err)
	_, err = h.Fork(ctx, "taken", nil)
	assert.Equal(t, grove.AlreadyExists, grove.CodeOf(err), "error: %v", err)

	log, err := h.Log(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, log, "a failed restore or fork took a checkpoint")
	after, err := h.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}
