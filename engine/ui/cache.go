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

// Reading a head (its status, and its changes since its base) scans its
// files: tens of milliseconds in a large tree. The overview lists many
// heads and asks again every second, so the handler keeps each head's
// last reading, and a refresher reads the heads again in the background
// while someone looks at the page. The overview shows the last reading of
// every head, and a head not read yet as pending; the comparison uses a
// clean head's reading younger than fresh and reads the others at once; a
// head's own page is always read anew. A reading begun before an action on
// its head is dropped.
const (
	fresh     = 30 * time.Second
	idleAfter = time.Minute // the refresher rests this long after the last request
)

// reading is one head's row as read at a time.
type reading struct {
	row headRow
	at  time.Time
}

// commitDiff is the files changed between a head's base and its commit,
// which never change for that pair.
type commitDiff struct {
	base  grove.Rev
	at    grove.CheckpointID
	files []grove.FileStat
}

// cache holds the heads' last readings, by head ID (names are reused), and
// owns the refresher that keeps them fresh.
type cache struct {
	mu       sync.Mutex
	readings map[grove.HeadID]reading
	diffs    map[grove.HeadID]commitDiff
	changed  map[string]time.Time // when an action last changed the head of a name
	seen     atomic.Int64         // the last request, in Unix nanoseconds
	cancel   context.CancelFunc
	done     chan struct{}
}

// get returns the head's last reading and when it was made, unless an
// action changed the head since.
func (c *cache) get(id grove.HeadID) (headRow, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.readings[id]
	if !ok || r.at.Before(c.changed[r.row.Name]) {
		return headRow{}, time.Time{}, false
	}
	return r.row, r.at, true
}

// put keeps a reading begun at, unless a newer one, or an action on its
// head, came after it.
func (c *cache) put(row headRow, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.readings[row.ID]; (!ok || r.at.Before(at)) && !at.Before(c.changed[row.Name]) {
		c.readings[row.ID] = reading{row: row, at: at}
	}
}

// forget drops what it keeps of heads no longer listed.
func (c *cache) forget(live map[grove.HeadID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.readings {
		if !live[id] {
			delete(c.readings, id)
		}
	}
	for id := range c.diffs {
		if !live[id] {
			delete(c.diffs, id)
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

// committed is the files changed from base to commit, diffed once per
// head and pair.
func (c *cache) committed(ctx context.Context, hd *workspace.Head, base grove.Rev, commit grove.CheckpointID) ([]grove.FileStat, error) {
	id := hd.Info().ID
	c.mu.Lock()
	d, ok := c.diffs[id]
	c.mu.Unlock()
	if ok && d.base == base && d.at == commit {
		return slices.Clone(d.files), nil
	}
	diff, err := hd.Diff(ctx, base, grove.Rev(commit))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.diffs[id] = commitDiff{base: base, at: commit, files: diff.Files}
	c.mu.Unlock()
	return slices.Clone(diff.Files), nil
}

// touch records a request: the refresher works while requests come.
func (c *cache) touch() { c.seen.Store(time.Now().UnixNano()) }

// start starts the refresher, which reads every head not read in the last
// third of fresh, two at a time (the agents need the machine more than
// the page), then waits poll, and again; it rests while no request came
// for idleAfter.
func (c *cache) start(h *Handler, poll time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	c.readings, c.diffs, c.changed = map[grove.HeadID]reading{}, map[grove.HeadID]commitDiff{}, map[string]time.Time{}
	c.cancel, c.done = cancel, make(chan struct{})
	c.touch() // the page is about to be opened: read the heads now
	go func() {
		defer close(c.done)
		for {
			if time.Since(time.Unix(0, c.seen.Load())) < idleAfter {
				if rows, err := h.list(ctx, nil); err == nil {
					h.read(ctx, rows, olderThan(fresh/3), 2, false)
				}
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
