package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/groveworks/grove"
)

// DefaultTakeOverParallel is TakeOverOptions.Parallel's default.
const DefaultTakeOverParallel = 8

// TakeOverOptions says how Engine.TakeOver takes sessions over.
type TakeOverOptions struct {
	// Parallel is how many sessions are resumed at once; zero means
	// DefaultTakeOverParallel.
	Parallel int
	// Share is how many sessions this call takes at most. Zero means this
	// host's share: the waiting sessions divided by the engines connected
	// to the store, rounded up (with SQLite, whose store cannot tell, all
	// of them), so that the survivors of a dead host share its sessions.
	Share int
	// Resume is how each session is resumed; nil means AsRecorded, and
	// Relocate when the engine has a placement.
	Resume *ResumeOptions
}

// TakeOverResult is what Engine.TakeOver did.
type TakeOverResult struct {
	// Sessions are the sessions taken over, live in this engine now; the
	// caller closes each.
	Sessions []*Session
	// Waiting is how many open sessions no process held when it looked,
	// and Hosts how many engines were connected to the store (0 when the
	// store cannot tell).
	Waiting, Hosts int
	// Busy is how many of the sessions it tried another process took
	// first.
	Busy int
	// Failed are the sessions it could not resume, each with Resume's
	// error.
	Failed []TakeOverFailure
}

// TakeOverFailure is a session TakeOver could not resume.
type TakeOverFailure struct {
	ID  string
	Err error
}

// Hosts names the engines connected to the store now, this one
// included, as the store names them: with PostgreSQL, each engine's
// connections' application_name (the host, the process and the engine);
// nil with SQLite, whose store cannot tell. A store that cannot be read
// is a *StoreError.
func (e *Engine) Hosts(ctx context.Context) ([]string, error) {
	if err := grove.ContextError(ctx, "engine: hosts"); err != nil {
		return nil, err
	}
	return e.st.hosts(ctx)
}

// TakeOver resumes open sessions that no process holds (their host died,
// or was paused or cut off past its lease) in this engine: its share of
// them, in random order so that hosts looking at once mostly try
// different ones, Parallel at a time. A session another process takes
// first counts as Busy and the next one is tried in its place. The
// error is the store's, when the sessions cannot be listed, or Canceled;
// a session that fails to resume is in Failed and does not stop the
// others. Even with an error, the result's Sessions are live in this
// engine and the caller's to close. opts may be nil.
func (e *Engine) TakeOver(ctx context.Context, opts *TakeOverOptions) (TakeOverResult, error) {
	const op = "take over"
	var res TakeOverResult
	if opts == nil {
		opts = &TakeOverOptions{}
	}
	if opts.Parallel < 0 || opts.Share < 0 {
		return res, errorf(grove.InvalidArgument, op, "a negative Parallel or Share")
	}
	if err := grove.ContextError(ctx, "engine: "+op); err != nil {
		return res, err
	}
	open, err := e.st.sessions(ctx, sessionQuery{open: true})
	if err != nil {
		return res, err
	}
	var waiting []string
	for _, si := range open {
		if !si.Live {
			waiting = append(waiting, si.ID)
		}
	}
	res.Waiting = len(waiting)
	if len(waiting) == 0 {
		return res, nil
	}
	hosts, err := e.st.hosts(ctx)
	if err != nil {
		return res, err
	}
	res.Hosts = len(hosts)
	share := opts.Share
	if share == 0 {
		share = (len(waiting) + max(1, len(hosts)) - 1) / max(1, len(hosts))
	}
	ro := opts.Resume
	if ro == nil {
		ro = &ResumeOptions{AsRecorded: true, Relocate: !e.placement.IsZero()}
	}
	rand.Shuffle(len(waiting), func(i, j int) { waiting[i], waiting[j] = waiting[j], waiting[i] })

	parallel := opts.Parallel
	if parallel == 0 {
		parallel = DefaultTakeOverParallel
	}
	var (
		mu         sync.Mutex
		next, done int // sessions handed to workers, and tried
		wg         sync.WaitGroup
	)
	// claim hands a worker the next session to try, until this host has
	// its share (counting the tries under way) or none is left.
	claim := func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(waiting) || len(res.Sessions)+next-done >= share || ctx.Err() != nil {
			return "", false
		}
		id := waiting[next]
		next++
		return id, true
	}
	for range min(parallel, len(waiting)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				id, ok := claim()
				if !ok {
					return
				}
				s, err := e.Resume(ctx, id, ro)
				var re *ResumeError
				mu.Lock()
				done++
				switch {
				case err == nil:
					res.Sessions = append(res.Sessions, s)
				case errors.As(err, &re) && re.Kind == SessionBusy:
					res.Busy++
				default:
					res.Failed = append(res.Failed, TakeOverFailure{ID: id, Err: err})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res, grove.ContextError(ctx, "engine: "+op)
}
