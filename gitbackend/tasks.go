package gitbackend

import (
	"context"
	"sync"
)

// tasks is one kind of a Backend's background work (pushes, deletions of
// destroyed heads, repository maintenance), owned: every task runs with a
// context that close cancels, close waits for every task, and none starts
// after it. A task may be keyed, so that at most one with a key runs at a
// time. The zero value is ready to use.
type tasks struct {
	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	closed  bool
	running int
	idle    chan struct{} // closed when running falls to zero
	keys    map[string]bool
}

// start runs f in the background, unless the tasks are closed or a task
// with key ("" for none) runs: it reports whether it started f.
func (t *tasks) start(key string, f func(ctx context.Context)) bool {
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

func (t *tasks) done(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if key != "" {
		delete(t.keys, key)
	}
	if t.running--; t.running == 0 {
		close(t.idle)
	}
}

// wait returns once no task runs, or when ctx ends (its error).
func (t *tasks) wait(ctx context.Context) error {
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

// close cancels every task, waits for them, and starts none after.
func (t *tasks) close() {
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
