package backendutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/backend/backendutil"
)

func TestCallBlockerParksOnlyTheArmedOpOnce(t *testing.T) {
	var b backendutil.CallBlocker
	ctx := context.Background()
	require.NoError(t, b.Park(ctx, "Checkpoint"), "an unarmed op passes at once")

	parked := b.BlockNextCall("Checkpoint")
	require.NoError(t, b.Park(ctx, "Status"), "another op passes at once")

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Park(cctx, "Checkpoint") }()
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		t.Fatal("the armed call never parked")
	}
	select {
	case err := <-done:
		t.Fatalf("the parked call returned before its context ended: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	err := <-done
	assert.True(t, errors.Is(err, context.Canceled), "Park returns the context's error, got %v", err)

	require.NoError(t, b.Park(ctx, "Checkpoint"), "the next call after the parked one passes")
}

func TestCallBlockerReturnsTheDeadline(t *testing.T) {
	var b backendutil.CallBlocker
	b.BlockNextCall("Restore")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, b.Park(ctx, "Restore"), context.DeadlineExceeded)
}
