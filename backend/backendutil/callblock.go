package backendutil

import (
	"context"
	"sync"
)

// CallBlocker parks the next call of a named operation until the call's
// context ends, so that a test can cancel a call while it runs: the test
// arms it with BlockNextCall, and the code under test (a driver, or a
// wrapper around one) calls Park where the operation starts or at the
// point inside its work that the test is about. The zero value is ready to
// use; it is safe for concurrent use.
type CallBlocker struct {
	mu   sync.Mutex
	next map[string]chan struct{} // by operation: closed once that call is parked
}

// BlockNextCall makes the next Park of op wait until that call's context
// ends. The returned channel is closed once the call is parked, which is
// when the test should cancel it. Arming op again before a call parks
// replaces the earlier arming, whose channel is then never closed.
func (b *CallBlocker) BlockNextCall(op string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next == nil {
		b.next = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	b.next[op] = ch
	return ch
}

// Park returns nil at once unless BlockNextCall armed op. An armed call
// disarms op, closes the channel BlockNextCall returned, waits until ctx
// ends and returns ctx.Err(): the caller either returns that error (as a
// Canceled *grove.Error: see grove.ContextError) or goes on with the
// ended context, to see how the code after the parking point answers it.
func (b *CallBlocker) Park(ctx context.Context, op string) error {
	b.mu.Lock()
	ch, ok := b.next[op]
	delete(b.next, op)
	b.mu.Unlock()
	if !ok {
		return nil
	}
	close(ch)
	<-ctx.Done()
	return ctx.Err()
}
