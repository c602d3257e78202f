package gitbackend

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/tasks"
	"github.com/groveworks/grove/internal/transport"
)

// Checkpoints that travel. A workspace opened with a Remote pushes its
// heads' branches and checkpoint refs there in the background, and
// rebuilds in this clone a head another clone pushed (Relocate); how a
// transfer runs is internal/transport's.

// remoteClient is the workspace's side of its remote (w.remote is set).
func (w *workspace) remoteClient() *transport.Client {
	return &transport.Client{Repo: transportRepo{w}, Runner: w.repo.Runner, Common: w.repo.Common,
		Registry: w.meta, Remote: w.remote, Clone: w.clone}
}

// transportRepo is a workspace's repository as transport.Client drives it.
type transportRepo struct{ w *workspace }

func (r transportRepo) Git(ctx context.Context, args ...string) (string, error) {
	return r.w.repo.Git(ctx, args...)
}

func (r transportRepo) ObjectFormat(ctx context.Context) (string, error) {
	return r.w.repo.ObjectFormat(ctx)
}

func (r transportRepo) WriteCommit(tree, parent string, author, committer grove.Signature, when time.Time, msg string) (string, bool) {
	return r.w.repo.WriteCommit(tree, parent, author, committer, when, msg)
}

// pushes runs a Backend's background pushes: one task per head at most,
// which pushes again when asked while it ran. The tasks are the
// Backend's: Close cancels them (a push waiting to retry stops at once)
// and waits for them.
//
// A task's push is batched (see batches) by repository and remote, so
// that heads travel only with those of the same credentials: the task
// that takes the slot pushes every head then queued there (up to
// maxPushBatch) together (transport.Client.Push), so that a host whose
// heads checkpoint faster than they travel runs one push for many heads,
// not one for each.
type pushes struct {
	tasks    tasks.Group
	mu       sync.Mutex
	failures []PushFailure       // since the last PushFailures
	running  map[string]*pushJob // by common dir and head ID
	batch    batches[registry.Manifest, transport.PushResult]
	caughtUp map[string]bool // the repositories catchUp looked at
}

type pushJob struct{ again bool }

// pushSlots is how many pushes of one queue (repository and remote) run
// at once: one, since the heads that wait meanwhile go together in the
// next, and a push costs about the same for one head as for many — the
// remote lists all its refs and checks the push against all of them,
// so that a second slot only doubles that work for a fleet's remote;
// each queue has its own, so that a slow remote holds up only its own
// heads. maxPushBatch is how many heads one slot's turn takes at most.
const (
	pushSlots    = 1
	maxPushBatch = 64
)

// Push timing: a failed push is tried again after defaultPushBackoff
// (a test sets its own), doubling up to pushMaxBackoff,
// Options.PushAttempts times in all; then the next checkpoint, restore or
// open starts again.
const (
	defaultPushBackoff = 250 * time.Millisecond
	pushMaxBackoff     = 15 * time.Second
)

func (b *Backend) pushBackoff() time.Duration {
	if b.seams.backoff > 0 {
		return b.seams.backoff
	}
	return defaultPushBackoff
}

// schedulePush pushes head mf to the workspace's remote in the
// background; a push already running for it runs once more when done.
// Each push reads the head's manifest as it then is (its sparse set may
// have changed since mf).
func (w *workspace) schedulePush(mf registry.Manifest) {
	if w.remote == nil || mf.Attached {
		return
	}
	p := &w.b.pushes
	key := w.repo.Common + "\x00" + string(mf.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]*pushJob{}
	}
	if job, ok := p.running[key]; ok {
		job.again = true
		return
	}
	job := &pushJob{}
	p.running[key] = job
	started := p.tasks.Start("", func(ctx context.Context) {
		for {
			cur := mf
			if m, err := w.meta.ReadManifest(mf.ID); err == nil {
				cur = *m
			}
			w.pushHead(ctx, cur)
			p.mu.Lock()
			if !job.again || ctx.Err() != nil {
				delete(p.running, key)
				p.mu.Unlock()
				return
			}
			job.again = false
			p.mu.Unlock()
		}
	})
	if !started { // the backend is closed
		delete(p.running, key)
	}
}

// push pushes head mf once, with whatever other heads of the workspace
// wait to push when its slot frees (see pushes), and reports how its push
// ended, as transport.Client.PushOnce does; retry is set when ctx ended.
func (w *workspace) push(ctx context.Context, mf registry.Manifest) (retry bool, err error) {
	key := w.repo.Common + "\x00" + w.remote.Key()
	res, ok := w.b.pushes.batch.do(ctx, key, cmp.Or(w.b.seams.slots, pushSlots), maxPushBatch, mf, func(mfs []registry.Manifest) []transport.PushResult {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		return w.remoteClient().Push(pctx, mfs)
	})
	if !ok {
		return true, ctx.Err()
	}
	return res.Retry, res.Err
}

// WaitPushes waits until no background push runs, or ctx ends.
func (b *Backend) WaitPushes(ctx context.Context) error {
	if err := b.pushes.tasks.Wait(ctx); err != nil {
		return grove.ContextError(ctx, "gitbackend: wait for pushes")
	}
	return nil
}

// PushFailure is a background push that gave up (Backend.PushFailures).
type PushFailure struct {
	Head grove.HeadID
	Name string // the head's name
	URL  string // the remote
	// Lost is set when the push was refused because another clone took
	// the head over: it is not tried again.
	Lost bool
	Err  error
}

// PushFailures returns the background pushes that gave up since the last
// call, oldest first, and forgets them. A program that exits soon after a
// checkpoint calls WaitPushes, then this, to say what did not travel.
func (b *Backend) PushFailures() []PushFailure {
	b.pushes.mu.Lock()
	defer b.pushes.mu.Unlock()
	out := b.pushes.failures
	b.pushes.failures = nil
	return out
}

func (w *workspace) pushFailed(mf registry.Manifest, lost bool, err error) {
	p := &w.b.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failures) < 1000 {
		p.failures = append(p.failures, PushFailure{Head: mf.ID, Name: mf.Name, URL: w.remote.URL, Lost: lost, Err: err})
	}
}

// PushState is what a clone last pushed of one head (Backend.Pushed).
type PushState struct {
	// Commit is the head's branch on the remote as this clone last pushed
	// it (or fetched it, for a relocated head); "" when nothing was.
	Commit grove.CheckpointID
	// At is when that was recorded.
	At time.Time
	// Error is why the last pushes gave up, if they did.
	Error string
	// Lost is set when another clone took the head over (relocated it):
	// this clone no longer pushes it.
	Lost bool
	// Behind is how many of the head's checkpoints this clone made that
	// it has not pushed (yet, or ever, when Lost).
	Behind int
}

// Pushed reports what the clone of the repository at locator (a path in
// it) last pushed of head id to url.
func (b *Backend) Pushed(ctx context.Context, locator string, id grove.HeadID, url string) (PushState, error) {
	r, err := b.enter(ctx, "Pushed")
	if err != nil {
		return PushState{}, err
	}
	rp, err := b.locate(ctx, "gitbackend: pushed", r, locator)
	if err != nil {
		return PushState{}, err
	}
	if !registry.ValidHeadID(id) {
		return PushState{}, grove.Errorf(grove.InvalidArgument, "gitbackend: pushed", "%q is not a head ID", id)
	}
	if u, _ := transport.SplitCredentials(url); u != url {
		url = u // recorded without its credentials
	}
	rec := registry.Of(rp.Common).ReadPushed(id, url)
	st := PushState{Commit: grove.CheckpointID(rec.Commit), At: rec.At, Error: rec.Error, Lost: rec.Lost}
	cps, err := rp.Checkpoints(ctx, id, 0)
	if err != nil {
		return st, err
	}
	for _, cp := range cps {
		if cp.Seq > rec.Seq {
			st.Behind++
		}
	}
	return st, nil
}

// pushHead pushes head mf's branch and new checkpoint refs, retrying,
// until ctx (the backend's) ends.
func (w *workspace) pushHead(ctx context.Context, mf registry.Manifest) {
	delay := w.b.pushBackoff()
	var err error
	attempts := w.b.opts.PushAttempts
	if attempts <= 0 {
		attempts = DefaultPushAttempts
	}
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return // the backend closed: the next open pushes again
			case <-t.C:
			}
			delay = min(2*delay, pushMaxBackoff)
		}
		var retry bool
		retry, err = w.push(ctx, mf)
		if ctx.Err() != nil {
			return
		}
		if err == nil || !retry && grove.CodeOf(err) != grove.FailedPrecondition {
			if err != nil { // refused: another clone took the head over
				w.pushFailed(mf, true, err)
			}
			return
		}
		if !retry {
			break // the clone lacks what the push needs: no retry can help
		}
	}
	w.pushFailed(mf, false, err)
	rec := w.meta.ReadPushed(mf.ID, w.remote.URL)
	rec.Error = err.Error()
	_ = w.meta.WritePushed(mf.ID, rec)
}

// catchUp schedules a push of every live head the remote may lag behind
// (a push given up on, or one a process ended before): once per backend
// and repository.
func (w *workspace) catchUp() {
	if w.remote == nil {
		return
	}
	p := &w.b.pushes
	p.mu.Lock()
	if p.caughtUp == nil {
		p.caughtUp = map[string]bool{}
	}
	done := p.caughtUp[w.repo.Common]
	p.caughtUp[w.repo.Common] = true
	p.mu.Unlock()
	if done {
		return
	}
	all, err := w.meta.Manifests()
	if err != nil {
		return
	}
	for _, mf := range all {
		if mf.Live() && !mf.Attached && mf.Clone == w.clone {
			w.schedulePush(*mf)
		}
	}
}
