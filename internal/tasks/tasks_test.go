package tasks

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A keyed task runs once at a time; Wait returns when the group is idle
// or its context ends; Close cancels the running tasks, waits for them,
// and nothing starts after it.
func TestGroupOwnsItsTasks(t *testing.T) {
	var g Group
	require.NoError(t, g.Wait(context.Background()), "an idle group")

	release := make(chan struct{})
	started := make(chan struct{})
	require.True(t, g.Start("k", func(context.Context) { close(started); <-release }))
	<-started
	assert.False(t, g.Start("k", func(context.Context) {}), "a second task with the running key")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, g.Wait(ctx), context.Canceled, "a wait whose context ended")
	close(release)
	require.NoError(t, g.Wait(context.Background()))
	require.True(t, g.Start("k", func(context.Context) {}), "the key is free again")
	require.NoError(t, g.Wait(context.Background()))

	var cancelled atomic.Bool
	running := make(chan struct{})
	require.True(t, g.Start("", func(ctx context.Context) { close(running); <-ctx.Done(); cancelled.Store(true) }))
	<-running
	g.Close()
	assert.True(t, cancelled.Load(), "Close returned before its task ended")
	assert.False(t, g.Start("", func(context.Context) { t.Error("a task ran after Close") }))
	require.NoError(t, g.Wait(context.Background()))
}
