package workspace

import (
	"context"
	"sync"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/lock"
)

// headKey names one head process-wide.
type headKey struct {
	backend   grove.ID
	workspace grove.WorkspaceID
	head      grove.HeadID
}

// headLocks serializes the calls on one head across every *Head value of
// the process that names it; an entry lives while someone holds or waits
// for it (lock.Shared, the one registry of such locks).
var headLocks lock.Shared[headKey, headSem]

// headSem is one head's lock: a token in a channel, so that a wait ends
// with its context.
type headSem struct {
	once sync.Once
	ch   chan struct{}
}

func (s *headSem) token() chan struct{} {
	s.once.Do(func() { s.ch = make(chan struct{}, 1) })
	return s.ch
}

// lockHead acquires the lock of k, giving up when ctx ends. The returned
// function releases it.
func lockHead(ctx context.Context, k headKey) (func(), error) {
	sem, drop := headLocks.Acquire(k)
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	select {
	case sem.token() <- struct{}{}:
		return func() { <-sem.token(); drop() }, nil
	case <-done:
		drop()
		return nil, ctx.Err()
	}
}
