package workspace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// An isolated head another holder has open is AlreadyBound at once, or,
// with Wait, opened as soon as the holder lets go; a holder that keeps it
// past Wait still gives AlreadyBound, and so does Reopen.
func TestOpenWaitsForAHolderThatLetsGo(t *testing.T) {
	ctx := context.Background()
	b := project()
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	held, err := ws.NewHead("agent").Create(ctx)
	require.NoError(t, err)
	bind := held.Binding()

	_, err = ws.OpenHead(ctx, "agent", nil)
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "no wait")
	_, err = ws.OpenHead(ctx, "agent", &workspace.ReopenOptions{Wait: 50 * time.Millisecond})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "held past the wait")
	_, err = workspace.Reopen(ctx, b, bind, &workspace.ReopenOptions{Wait: 50 * time.Millisecond})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "held past the wait")

	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(100 * time.Millisecond)
		assert.NoError(t, held.Close())
	}()
	h, err := ws.OpenHead(ctx, "agent", &workspace.ReopenOptions{Wait: time.Minute})
	require.NoError(t, err, "opened once the holder let go")
	<-released
	require.NoError(t, h.Close())

	// A context that ends ends the wait (an hour's: the test would hang).
	held, err = ws.OpenHead(ctx, "agent", nil)
	require.NoError(t, err)
	defer held.Close()
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = workspace.Reopen(cctx, b, bind, &workspace.ReopenOptions{Wait: time.Hour})
	assert.Error(t, err)
}
