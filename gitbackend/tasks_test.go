package gitbackend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/workspace"
)

// git gc --auto ran every 50th checkpoint while the checkpoint held the
// repository lock and the head's lock, under a context that ignored
// cancellation: on a large repository, one head's checkpoint stalled every
// other head's operations. It now runs in the background, holding neither.
func TestMaintenanceRunsOutsideGrovesLocks(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newFixture(t)
	b := gitbackend.New(gitbackend.Options{})
	type seen struct{ repoHeld, headHeld bool }
	gcs := make(chan seen, 4)
	var headLock atomic.Value
	gitbackend.SetProcessHook(b, func(args []string) {
		if !slices.Contains(args, "gc") {
			return
		}
		s := seen{repoHeld: lock.Held(filepath.Join(commonOf(f), "grove", "locks", "repo.lock"))}
		if p, ok := headLock.Load().(string); ok {
			s.headHeld = lock.Held(p)
		}
		gcs <- s
	})
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	headLock.Store(filepath.Join(commonOf(f), "grove", "locks", string(h.Info().ID)+".lock"))
	for i := range 50 {
		f.write(h, "n.txt", fmt.Sprint(i))
		_, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
	}
	select {
	case s := <-gcs:
		assert.False(t, s.repoHeld, "git gc ran under the repository lock")
		assert.False(t, s.headHeld, "git gc ran under the head's lock")
	case <-time.After(30 * time.Second):
		t.Fatal("no git gc --auto after 50 checkpoints")
	}
	require.NoError(t, b.Close(), "Close waits for the maintenance")
}

// Pushes that retry kept sleeping on a background context and starting git
// after Backend.Close. Close now cancels them and waits: no git process
// of the backend starts after Close returns.
func TestCloseStopsBackgroundPushes(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	b := gitbackend.New(gitbackend.Options{PushAttempts: 50})
	gitbackend.SetPushBackoff(b, 20*time.Millisecond)
	var closed atomic.Bool
	var after atomic.Int64
	gitbackend.SetProcessHook(b, func([]string) {
		if closed.Load() {
			after.Add(1)
		}
	})
	ws, err := workspace.Open(f.ctx, b, a.clone, a.opts())
	require.NoError(t, err)
	h, err := ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	require.NoError(t, os.Rename(f.remote, f.remote+".away")) // every push fails, and retries
	writeFile(t, h, "one.txt", "1\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // a few retries
	require.NoError(t, h.Close())
	require.NoError(t, ws.Close())
	start := time.Now()
	require.NoError(t, b.Close())
	closed.Store(true)
	assert.Less(t, time.Since(start), 10*time.Second, "Close waited for the retries to run out")
	time.Sleep(300 * time.Millisecond)
	assert.Zero(t, after.Load(), "git started after Close")
}

// WaitPushes and WaitDeletions may be called while pushes and deletions
// start: no WaitGroup is added to while it is waited on at zero (the race
// detector reports that), and a wait that times out leaves nothing behind.
func TestWaitingWhileWorkStartsIsSafe(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newFleet(t)
	a := f.host("a")
	h, err := a.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, wait := range []func() error{
		func() error { return a.b.WaitPushes(f.ctx) },
		func() error { return a.b.WaitDeletions(f.ctx) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = wait()
				}
			}
		}()
	}
	for i := range 10 {
		writeFile(t, h, "n.txt", fmt.Sprint(i))
		_, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		other, err := a.ws.NewHead(fmt.Sprintf("tmp-%d", i)).From("main").Create(f.ctx)
		require.NoError(t, err)
		_, err = other.Destroy(f.ctx, nil)
		require.NoError(t, err)
	}
	close(stop)
	wg.Wait()
	a.wait()
}
