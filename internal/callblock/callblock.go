// Package callblock parks a driver's next call of an operation until the
// call's context ends: the BlockNextCall half of a backendtest.Harness,
// shared by the harnesses of grove's backends.
package callblock

import (
	"context"
	"sync"
)

// Blocker is used as a backend's intercept hook. The zero value is ready
// to use; it is safe for concurrent use.
type Blocker struct {
	mu     sync.Mutex
	blocks map[string]chan struct{}
}

// Intercept parks the call if BlockNextCall asked for op: it closes the
// channel BlockNextCall returned, waits for ctx to end and returns its
// error. Other calls pass at once.
func (b *Blocker) Intercept(ctx context.Context, op string) error {
	b.mu.Lock()
	parked, ok := b.blocks[op]
	delete(b.blocks, op)
	b.mu.Unlock()
	if !ok {
		return nil
	}
	close(parked)
	<-ctx.Done()
	return ctx.Err()
}

// BlockNextCall makes the next Intercept of op park; the returned channel
// is closed once that call is parked.
func (b *Blocker) BlockNextCall(op string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocks == nil {
		b.blocks = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	b.blocks[op] = ch
	return ch
}
