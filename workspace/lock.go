package workspace

import (
	"context"
	"sync"

	"github.com/groveworks/grove"
)

// headKey names one head process-wide.
type headKey struct {
	backend   grove.ID
	workspace grove.WorkspaceID
	head      grove.HeadID
}

// headLocks serializes the calls on one head across every *Head value of
// the process that names it. Entries are reference-counted and dropped when
// the last waiter leaves.
var headLocks = struct {
	sync.Mutex
	m map[headKey]*headLock
}{m: make(map[headKey]*headLock)}

type headLock struct {
	ch   chan struct{} // holds a token while locked
	refs int
}

// lockHead acquires the lock of k, giving up when ctx ends. The returned
// function releases it.
func lockHead(ctx context.Context, k headKey) (func(), error) {
	headLocks.Lock()
	l := headLocks.m[k]
	if l == nil {
		l = &headLock{ch: make(chan struct{}, 1)}
		headLocks.m[k] = l
	}
	l.refs++
	headLocks.Unlock()

	drop := func() {
		headLocks.Lock()
		l.refs--
		if l.refs == 0 {
			delete(headLocks.m, k)
		}
		headLocks.Unlock()
	}
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; drop() }, nil
	case <-done:
		drop()
		return nil, ctx.Err()
	}
}
