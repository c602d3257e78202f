// Package tasks owns background goroutines: every task runs with a
// context that Close cancels, Close waits for every task, and none starts
// after it. A Group is what the git backend's pushes, deletions and
// repository maintenance each run in.
package tasks

import (
	"context"
	"sync"
)

// Group is one kind of background work, owned: every task runs with a
// context that Close cancels, Close waits for every task, and none starts
// after it. A task may be keyed, so that at most one with a key runs at a
// time. The zero Group is ready to use.
type Group struct {
	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	closed  bool
	running int
	idle    chan struct{} // closed when running falls to zero
	keys    map[string]bool
}

// Start runs f in the background, unless the tasks are closed or a task
// with key ("" for none) runs: it reports whether it started f.
func (t *Group) Start(key string, f func(ctx context.Context)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || (key != "" && t.keys[key]) {
		return false
	}
	if t.ctx == nil {
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	if key != "" {
		if t.keys == nil {
			t.keys = map[string]bool{}
		}
		t.keys[key] = true
	}
	if t.running == 0 {
		t.idle = make(chan struct{})
	}
	t.running++
	go func() {
		defer t.done(key)
		f(t.ctx)
	}()
	return true
}

func (t *Group) done(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if key != "" {
		delete(t.keys, key)
	}
	if t.running--; t.running == 0 {
		close(t.idle)
	}
}

// Wait returns once no task runs, or when ctx ends (its error).
func (t *Group) Wait(ctx context.Context) error {
	t.mu.Lock()
	if t.running == 0 {
		t.mu.Unlock()
		return nil
	}
	idle := t.idle
	t.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close cancels every task, waits for them, and starts none after.
func (t *Group) Close() {
	t.mu.Lock()
	t.closed = true
	if t.cancel != nil {
		t.cancel()
	}
	idle := t.idle
	running := t.running
	t.mu.Unlock()
	if running > 0 {
		<-idle
	}
}
