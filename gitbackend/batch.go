package gitbackend

import (
	"context"
	"slices"
	"sync"
)

// batches runs together the calls that wait at once: a call waits in its
// key's queue for one of the key's slots, and the call that takes a slot
// runs every call then queued there (up to max) in one run, which
// returns each call's result. A remote costs about as much for one
// head's transfer as for many (it lists and checks all its refs each
// time), so that a host busy with many heads pays for a few transfers,
// not one per head, while a lone call runs at once. Its zero value is
// ready to use.
type batches[Q, R any] struct {
	mu    sync.Mutex
	queue map[string][]*batchCall[Q, R] // by key, oldest first
	slots map[string]chan struct{}      // by key: the runs under way
}

type batchCall[Q, R any] struct {
	q     Q
	taken bool          // a run took it (under batches.mu)
	done  chan struct{} // closed once r is set
	r     R
}

// do runs q, with whatever calls of key wait when a slot of key frees
// (slots of them at most run at once), and returns its result; ok is
// false when ctx ended first (q may still run, in a run another call
// took it into).
func (b *batches[Q, R]) do(ctx context.Context, key string, slots, max int, q Q, run func([]Q) []R) (r R, ok bool) {
	me := &batchCall[Q, R]{q: q, done: make(chan struct{})}
	b.mu.Lock()
	if b.queue == nil {
		b.queue, b.slots = map[string][]*batchCall[Q, R]{}, map[string]chan struct{}{}
	}
	b.queue[key] = append(b.queue[key], me)
	slot := b.slots[key]
	if slot == nil {
		slot = make(chan struct{}, slots)
		b.slots[key] = slot
	}
	b.mu.Unlock()
	// leave takes q out of the queue, unless a run took it.
	leave := func() (R, bool) {
		b.mu.Lock()
		if !me.taken {
			b.queue[key] = slices.DeleteFunc(b.queue[key], func(o *batchCall[Q, R]) bool { return o == me })
		}
		b.mu.Unlock()
		return r, false
	}
	for {
		b.mu.Lock()
		taken := me.taken
		b.mu.Unlock()
		take := slot
		if taken {
			take = nil // a nil channel never sends: wait for the run that took me
		}
		select {
		case <-me.done:
			return me.r, true
		case <-ctx.Done():
			return leave()
		case take <- struct{}{}:
		}
		if ctx.Err() != nil {
			// The slot, but no context to run the others' calls with.
			<-slot
			return leave()
		}
		b.mu.Lock()
		q := b.queue[key]
		n := min(len(q), max)
		batch := q[:n:n]
		if n == len(q) {
			delete(b.queue, key)
		} else {
			b.queue[key] = q[n:]
		}
		for _, o := range batch {
			o.taken = true
		}
		b.mu.Unlock()
		if len(batch) > 0 {
			qs := make([]Q, len(batch))
			for i, o := range batch {
				qs[i] = o.q
			}
			rs := run(qs)
			for i, o := range batch {
				o.r = rs[i]
				close(o.done)
			}
		}
		<-slot
	}
}

// waiting is how many calls wait in the queues.
func (b *batches[Q, R]) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, q := range b.queue {
		n += len(q)
	}
	return n
}
