package ui

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// Reading a head (its status, and its diff since its base, uncommitted
// work included) scans its files: tens of milliseconds in a large tree.
// The overview and the comparison read many heads, and the overview asks
// again every second, so the handler keeps each head's last reading and a
// refresher reads the heads again in the background while someone looks
// at the page. The overview shows the last reading of every head, and a
// head not read yet as pending; the comparison uses a reading younger than
// fresh and reads the others at once. A head's own page is always read
// anew, and a reading begun before an action on its head is dropped.
const (
	fresh     = 30 * time.Second
	forever   = time.Duration(1<<63 - 1)
	idleAfter = time.Minute // the refresher stops this long after the last request
)

// reading is one head's row as read at a time.
type reading struct {
	row headRow
	at  time.Time
}

// cache holds the heads' last readings, by head ID (names are reused), and
// owns the refresher that keeps them fresh.
type cache struct {
	mu       sync.Mutex
	readings map[grove.HeadID]reading
	reading  map[grove.HeadID]chan struct{} // reads under way, closed when done
	changed  map[string]time.Time           // when an action last changed the head of a name
	seen     atomic.Int64                   // the last request, in Unix nanoseconds
	diffs    sync.Map                       // "base commit" -> []grove.FileStat: the changes between two commits
	cancel   context.CancelFunc
	done     chan struct{}
}

// get returns the head's reading if it is younger than maxAge.
func (c *cache) get(id grove.HeadID, maxAge time.Duration) (headRow, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.readings[id]
	if !ok || time.Since(r.at) > maxAge || r.at.Before(c.changed[r.row.Name]) {
		return headRow{}, false
	}
	return r.row, true
}

// read reads the head row names with f, unless join is set and another
// read of it is under way: then it waits for that one and takes its
// reading.
func (c *cache) read(ctx context.Context, row *headRow, join bool, f func(*headRow)) {
	if !join {
		at := time.Now()
		f(row)
		c.put(ctx, *row, at)
		return
	}
	c.mu.Lock()
	ch, busy := c.reading[row.ID]
	if !busy {
		ch = make(chan struct{})
		c.reading[row.ID] = ch
	}
	c.mu.Unlock()
	if busy {
		select {
		case <-ch:
			if r, ok := c.get(row.ID, fresh); ok {
				info, s := row.HeadInfo, row.Session
				*row = r
				row.HeadInfo, row.Session = info, s
				return
			}
		case <-ctx.Done():
			return
		}
		c.read(ctx, row, join, f) // that read failed: this one tries
		return
	}
	at := time.Now()
	f(row)
	c.put(ctx, *row, at)
	c.mu.Lock()
	delete(c.reading, row.ID)
	close(ch)
	c.mu.Unlock()
}

// put keeps a reading begun at, unless a newer one (or an action) came
// after it.
func (c *cache) put(ctx context.Context, row headRow, at time.Time) {
	if ctx.Err() != nil {
		return // cut short
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.readings[row.ID]; (!ok || r.at.Before(at)) && !at.Before(c.changed[row.Name]) {
		c.readings[row.ID] = reading{row: row, at: at}
	}
}

// forget drops the readings of heads no longer listed.
func (c *cache) forget(live map[grove.HeadID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.readings {
		if !live[id] {
			delete(c.readings, id)
		}
	}
}

// drop forgets the reading of the head called name, and any begun before
// now: an action changed it.
func (c *cache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changed[name] = time.Now()
}

// touch records a request: the refresher works while requests come.
func (c *cache) touch() { c.seen.Store(time.Now().UnixNano()) }

// start starts the refresher, which reads every head, one at a time (the
// agents need the machine more than the page), then waits poll, and
// again; it rests while no request came for idleAfter.
func (c *cache) start(h *Handler, poll time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	c.readings, c.reading, c.changed = map[grove.HeadID]reading{}, map[grove.HeadID]chan struct{}{}, map[string]time.Time{}
	c.cancel, c.done = cancel, make(chan struct{})
	c.touch() // the page is about to be opened: read the heads now
	go func() {
		defer close(c.done)
		for {
			if time.Since(time.Unix(0, c.seen.Load())) < idleAfter {
				_, _ = h.rows(ctx, nil, fresh/3, 2, false)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
		}
	}()
}

// stop stops the refresher and waits for it.
func (c *cache) stop() {
	c.cancel()
	<-c.done
}

// committed is the files changed from base to commit, which never change:
// each pair is diffed once.
func (c *cache) committed(ctx context.Context, hd *workspace.Head, base grove.Rev, commit grove.CheckpointID) ([]grove.FileStat, error) {
	key := string(base) + " " + string(commit)
	if v, ok := c.diffs.Load(key); ok {
		return slices.Clone(v.([]grove.FileStat)), nil
	}
	d, err := hd.Diff(ctx, base, grove.Rev(commit))
	if err != nil {
		return nil, err
	}
	c.diffs.Store(key, d.Files)
	return slices.Clone(d.Files), nil
}
