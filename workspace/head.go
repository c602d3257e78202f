package workspace

import (
	"context"
	"strings"
	"sync"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/sparse"
)

// Head is one open head. Its methods are safe for concurrent use: calls
// that change the head are serialized process-wide (by backend, workspace
// and head ID), a call waiting for another gives up when its context ends,
// and Status, Info, Binding and the FS's reads never wait for them.
//
// A Head may be a read-only view (see ReadOnly): the same open head, whose
// methods that would change it or its files answer PermissionDenied.
type Head struct {
	*headCore
	readOnly bool
	w        *Workspace // the workspace as this view reaches it
	fs       *headFS
}

// headCore is the state every view of one open head shares.
type headCore struct {
	h      backend.Head
	ws     *Workspace // the workspace the head was opened from
	ownsWS bool       // the head came from Reopen and closes its workspace
	name   string
	key    headKey

	mu     sync.Mutex
	closed bool
}

func newHead(w *Workspace, h backend.Head, ownsWS bool) *Head {
	info := h.Info()
	c := &headCore{
		h:      h,
		ws:     w,
		ownsWS: ownsWS,
		name:   info.Name,
		key:    headKey{backend: w.b.ID(), workspace: w.ws.Info().ID, head: info.ID},
	}
	// The head's block is claimed when it is made or opened, so that it
	// holds one from then on; a failure here is said again at first use.
	if w.services != nil && info.Root != "" {
		_, _ = w.headServices(context.Background(), info)
	}
	return c.view(w, false)
}

func (c *headCore) view(w *Workspace, readOnly bool) *Head {
	hd := &Head{headCore: c, readOnly: readOnly, w: w}
	hd.fs = &headFS{h: hd, fs: c.h.FS()}
	return hd
}

// ReadOnly returns a read-only view of the same open head: it reads
// (Info, Binding, Status, Diff, Log, Commits, the FS's reads) as h does,
// and answers PermissionDenied to everything that would change the head,
// its files, its branch or its workspace: Checkpoint, Restore, Fork,
// Archive, Unarchive, Destroy, every FS write, and the write methods of
// the Workspace it returns. Closing the view closes the head.
func (h *Head) ReadOnly() *Head {
	if h.readOnly {
		return h
	}
	return h.view(&Workspace{wsCore: h.ws.wsCore, readOnly: true}, true)
}

// IsReadOnly reports whether h is a read-only view.
func (h *Head) IsReadOnly() bool { return h.readOnly }

// writable fails with PermissionDenied on a read-only view.
func (h *Head) writable(op string) error {
	if h.readOnly {
		return fail(grove.PermissionDenied, op, h.name, "the head was opened read-only")
	}
	return nil
}

// begin checks that the head is open, writable unless read, and ctx live,
// then takes the head's lock. The returned function releases it.
func (h *Head) begin(ctx context.Context, op string, write bool) (func(), error) {
	if err := ctxErr(ctx, op, h.name); err != nil {
		return nil, err
	}
	if write {
		if err := h.writable(op); err != nil {
			return nil, err
		}
	}
	if err := h.checkOpen(op); err != nil {
		return nil, err
	}
	unlock, err := lockHead(ctx, h.key)
	if err != nil {
		return nil, &grove.Error{Code: grove.Canceled, Op: opPrefix + op, Head: h.name, Err: err}
	}
	// Close or Destroy may have run while we waited.
	if err := h.checkOpen(op); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

func (c *headCore) checkOpen(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fail(grove.FailedPrecondition, op, c.name, "head is closed")
	}
	return nil
}

// Info describes the head: ID, name, access, branch, root directory, base
// commit and state. It works after Close.
func (h *Head) Info() grove.HeadInfo { return h.h.Info() }

// Binding returns the binding that reopens exactly this head, to be
// persisted before a session uses the head. It is constant for the head's
// life and works after Close.
func (h *Head) Binding() grove.Binding { return h.h.Binding() }

// Workspace returns the workspace the head belongs to; for a read-only
// view, a read-only view of it.
func (h *Head) Workspace() *Workspace { return h.w }

// FS returns the head's working tree. After Close every call on it fails
// with FailedPrecondition; on a read-only view every write fails with
// PermissionDenied.
func (h *Head) FS() grove.FS { return h.fs }

// Checkpoint commits the head's whole state — tracked files and untracked
// files that are not ignored, with modes and symlinks — as
// backend.Head.Checkpoint describes. opts may be nil; an empty Message is
// "grove checkpoint" and a zero Author is DefaultAuthor. Include entries
// must be valid FS names. With Paths it captures those paths alone (see
// CheckpointOptions.Paths).
func (h *Head) Checkpoint(ctx context.Context, opts *CheckpointOptions) (grove.CheckpointResult, error) {
	const op = "checkpoint"
	o, err := driverCheckpoint(op, opts, "grove checkpoint")
	if err == nil && opts != nil {
		o.Paths, err = driverPaths(op, opts.Paths, h.ws.b.Capabilities())
	}
	if err != nil {
		return grove.CheckpointResult{}, wrap(op, h.name, err)
	}
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	defer unlock()
	res, err := h.h.Checkpoint(ctx, o)
	return res, wrap(op, h.name, err)
}

// unkept refuses an operation that would delete files the checkpoint cp
// could not hold: over the size cap, or in the way of a sparse head's
// directory.
func unkept(op, name string, cp grove.CheckpointResult) error {
	var lost []string
	for _, s := range cp.Skipped {
		if s.Reason == grove.SkipTooLarge || s.Reason == grove.SkipSparseConflict {
			lost = append(lost, s.Path)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return fail(grove.FailedPrecondition, op, name,
		"%d file(s) no checkpoint can hold would be lost (over the size cap, or in the way of a sparse head's directory: %s); include them in a checkpoint, move them away, or %s with Discard",
		len(lost), strings.Join(lost, ", "), op)
}

// Restore makes the head equal to revision to (a checkpoint, branch, tag or
// commit), losing nothing: unless opts.Discard, a dirty head is first
// checkpointed, and that safety checkpoint is returned in Safety. Then
// tracked content equals to exactly, untracked files that are not ignored
// and not in to are removed, ignored files are never touched, and for a
// head grove created the branch is reset to to. Where to tracks a path that
// is an ignored file in the head now, Restore fails with Conflict and
// changes no file; where the head holds files no checkpoint can hold (over
// the size cap), it fails with FailedPrecondition after the safety
// checkpoint, and changes no file. A revision that does not resolve is NotFound and changes
// nothing: it is resolved before the safety checkpoint is taken. opts may
// be nil.
func (h *Head) Restore(ctx context.Context, to grove.Rev, opts *RestoreOptions) (RestoreResult, error) {
	const op = "restore"
	if to == "" {
		return RestoreResult{}, fail(grove.InvalidArgument, op, h.name, "empty revision")
	}
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	cpo, err := driverCheckpoint(op, &o.Checkpoint, "grove: safety checkpoint before restore to "+string(to))
	if err != nil {
		return RestoreResult{}, wrap(op, h.name, err)
	}
	cpo.Scan = true
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return RestoreResult{}, err
	}
	defer unlock()
	var res RestoreResult
	if !o.Discard {
		// A revision that does not resolve fails the restore before the
		// safety checkpoint moves the head: a failed restore changes
		// nothing.
		if _, err := h.h.Diff(ctx, to, to); err != nil {
			return RestoreResult{}, wrap(op, h.name, err)
		}
		cp, err := h.h.Checkpoint(ctx, cpo)
		if err != nil {
			return RestoreResult{}, wrap(op, h.name, err)
		}
		if cp.New {
			res.Safety = &cp
		}
		if err := unkept(op, h.name, cp); err != nil {
			return res, err
		}
	}
	dr, err := h.h.Restore(ctx, to)
	res.Commit = dr.Commit
	return res, wrap(op, h.name, err)
}

// SetSparse changes the head's sparse set in place, dirs as
// HeadBuilder.Sparse takes them (none is the top's files alone, "." the
// whole tree): the
// files the new set adds are checked out, and those it leaves out are
// removed from disk where unchanged; a changed file stays, and is captured
// like any file outside the set; a file deleted stays deleted. Nothing is
// checkpointed and no work is lost: a change that would take ignored files
// (which no checkpoint holds) with the directories leaving the set is
// FailedPrecondition. Bad dirs are InvalidArgument; an attached head is
// FailedPrecondition; a backend without sparse heads is Unimplemented; a
// read-only view is PermissionDenied.
func (h *Head) SetSparse(ctx context.Context, dirs ...string) error {
	const op = "set sparse"
	set, err := sparse.New(append([]string{}, dirs...)) // none: the top alone
	if err != nil {
		return fail(grove.InvalidArgument, op, h.name, "%v", err)
	}
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return err
	}
	defer unlock()
	sp, ok := h.h.(backend.Sparser)
	switch {
	case !ok || !h.ws.b.Capabilities().Sparse:
		return fail(grove.Unimplemented, op, h.name, "the %s backend cannot change a head's sparse set", h.ws.b.ID())
	case h.h.Info().Attached:
		return fail(grove.FailedPrecondition, op, h.name, "an attached head keeps its checkout as it is: it cannot be sparse")
	}
	return wrap(op, h.name, sp.SetSparse(ctx, set))
}

// FetchLFS fetches the content of the head's Git LFS files that are their
// pointers (Status.LFSMissing) from remote, and only from it (never an
// endpoint the repository's configuration or .lfsconfig names, which an
// agent can write), and gives those files their content; see
// backend.LFSFetcher. A nil remote is InvalidArgument.
func (h *Head) FetchLFS(ctx context.Context, remote *grove.Remote) (grove.LFSFetch, error) {
	const op = "fetch lfs"
	if remote == nil || remote.URL == "" {
		return grove.LFSFetch{}, fail(grove.InvalidArgument, op, h.name, "no remote to fetch LFS content from")
	}
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return grove.LFSFetch{}, err
	}
	defer unlock()
	f, ok := h.h.(backend.LFSFetcher)
	if !ok {
		return grove.LFSFetch{}, fail(grove.Unimplemented, op, h.name, "the %s backend does not drive Git LFS", h.ws.b.ID())
	}
	res, err := f.FetchLFS(ctx, remote)
	return res, wrap(op, h.name, err)
}

// Fork creates a new isolated head called name from this head: by default
// from a checkpoint of its state now, uncommitted work included; with
// opts.From, from that revision, without touching this head. The new head
// is returned holding its isolation lock. A name a live or archived head
// has is AlreadyExists before anything is checkpointed; a create that
// fails for another reason (its directory is taken) leaves the checkpoint
// of the source, which holds the source's state as it was. A fork of a
// sparse head is sparse with the same set, and one of a head without
// submodules (HeadBuilder.NoSubmodules) has none either. The head's workspace must be
// open. opts may be nil. A read-only view does not fork
// (PermissionDenied): forking creates a head in the workspace.
func (h *Head) Fork(ctx context.Context, name string, opts *ForkOptions) (*Head, error) {
	const op = "fork"
	var o ForkOptions
	if opts != nil {
		o = *opts
	}
	if err := validName(name); err != nil {
		return nil, fail(grove.InvalidArgument, op, h.name, "%v", err)
	}
	if err := h.writable(op); err != nil {
		return nil, err
	}
	if err := h.ws.check(ctx, op); err != nil {
		return nil, err
	}
	from := o.From
	if from == "" {
		// A name already taken fails the fork before the checkpoint of
		// the source: a failed fork changes nothing it can know of.
		heads, err := h.ws.ws.Heads(ctx)
		if err != nil {
			return nil, wrap(op, h.name, err)
		}
		for _, hi := range heads {
			if hi.Name == name {
				return nil, &grove.Error{Code: grove.AlreadyExists, Op: opPrefix + op, Head: name, Err: errorf("a head named %q exists", name)}
			}
		}
		cpo, err := driverCheckpoint(op, &o.Checkpoint, "grove: checkpoint before fork to "+name)
		if err != nil {
			return nil, wrap(op, h.name, err)
		}
		cpo.Scan = true
		unlock, err := h.begin(ctx, op, true)
		if err != nil {
			return nil, err
		}
		cp, err := h.h.Checkpoint(ctx, cpo)
		unlock()
		if err != nil {
			return nil, wrap(op, h.name, err)
		}
		from = grove.Rev(cp.ID)
	} else if err := h.checkOpen(op); err != nil {
		return nil, err
	}
	// A fork materialises what its source does.
	nh, err := h.ws.ws.CreateHead(ctx, &backend.HeadSpec{Name: name, Access: grove.Isolated, From: from, Sparse: h.h.Info().Sparse, NoSubmodules: h.h.Info().NoSubmodules})
	if err != nil {
		return nil, wrap(op, h.name, err)
	}
	return newHead(h.ws, nh, false), nil
}

// Log lists the head's checkpoints, newest first, including checkpoints
// newer than the one the head was restored to. opts may be nil.
func (h *Head) Log(ctx context.Context, opts *LogOptions) ([]grove.Checkpoint, error) {
	const op = "log"
	if opts != nil && opts.Limit < 0 {
		return nil, fail(grove.InvalidArgument, op, h.name, "negative limit %d", opts.Limit)
	}
	unlock, err := h.begin(ctx, op, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cps, err := h.h.Log(ctx, driverLog(opts))
	return cps, wrap(op, h.name, err)
}

// Commits lists the commits on the head's branch that are not reachable
// from since, newest first: what the head gained behind grove's back.
func (h *Head) Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error) {
	const op = "commits"
	if since == "" {
		return nil, fail(grove.InvalidArgument, op, h.name, "empty revision")
	}
	unlock, err := h.begin(ctx, op, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ids, err := h.h.Commits(ctx, since)
	return ids, wrap(op, h.name, err)
}

// Status reports whether the head is dirty, what changed, conflicts, the
// current commit, the last checkpoint, an operation in progress, and
// whether it is archived. It never waits for another call on the head: a
// poll during a long checkpoint answers at once, from the head as it is.
func (h *Head) Status(ctx context.Context) (grove.Status, error) {
	const op = "status"
	if err := ctxErr(ctx, op, h.name); err != nil {
		return grove.Status{}, err
	}
	if err := h.checkOpen(op); err != nil {
		return grove.Status{}, err
	}
	st, err := h.h.Status(ctx)
	return st, wrap(op, h.name, err)
}

// Diff compares revision from with revision to, or with the working tree
// when to is Live.
func (h *Head) Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error) {
	const op = "diff"
	if from == "" {
		return grove.Diff{}, fail(grove.InvalidArgument, op, h.name, "empty revision")
	}
	unlock, err := h.begin(ctx, op, false)
	if err != nil {
		return grove.Diff{}, err
	}
	defer unlock()
	d, err := h.h.Diff(ctx, from, to)
	return d, wrap(op, h.name, err)
}

// Archive archives the head: its files stay, new binds are refused with
// Archived until it is unarchived, and this holder keeps working. The
// processes grove started in it are stopped first (Head.StopProcesses).
func (h *Head) Archive(ctx context.Context) error { return h.ArchiveWith(ctx, nil) }

// ArchiveWith is Archive as opts say (nil: as Archive).
func (h *Head) ArchiveWith(ctx context.Context, opts *ArchiveOptions) error {
	const op = "archive"
	if opts == nil || !opts.KeepRunning {
		if err := ctxErr(ctx, op, h.name); err != nil {
			return err
		}
		if err := h.writable(op); err != nil {
			return err
		}
		if _, err := h.stopProcesses(ctx, op); err != nil {
			return err
		}
	}
	return h.setArchived(ctx, op, true)
}

// Unarchive makes an archived head bindable again.
func (h *Head) Unarchive(ctx context.Context) error { return h.setArchived(ctx, "unarchive", false) }

func (h *Head) setArchived(ctx context.Context, op string, archived bool) error {
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return err
	}
	defer unlock()
	return wrap(op, h.name, h.h.SetArchived(ctx, archived))
}

// Destroy removes the head's directory and registration and closes the
// head. Unless opts.Discard, a dirty head is first checkpointed, and that
// final checkpoint is returned. Then the workspace's Teardown hook runs in
// the head (unless opts.SkipTeardown): what it changes is not checkpointed,
// and if it fails nothing is destroyed and the error (FailedPrecondition,
// wrapping the *HookError) comes with the final checkpoint. The branch and
// every checkpoint are kept, the head's binding reopens as Destroyed, and
// its name can be used again. The Git backend moves the directory aside
// at once (into .grove-trash beside it) and deletes its files in the
// background (gitbackend.Backend.WaitDeletions waits for that). The
// processes grove started in the head are stopped first (unless
// opts.KeepRunning), before the final checkpoint and Teardown, and stay
// stopped if either then refuses the destroy; its block of ports is
// free after. Destroying an attached head only forgets it, without Teardown: the
// user's files, branch and index stay exactly as they were. opts may be
// nil.
//
// Destroy without Discard never deletes what no checkpoint holds: when the
// final checkpoint had to skip new files over the size cap (Skipped with
// reason too-large), or files in the way of a sparse head's directories
// (sparse-conflict), nothing is destroyed and the error is
// FailedPrecondition naming them; the final checkpoint is still returned.
// Empty directories and irregular files hold no data and do not refuse.
func (h *Head) Destroy(ctx context.Context, opts *DestroyOptions) (DestroyResult, error) {
	const op = "destroy"
	var o DestroyOptions
	if opts != nil {
		o = *opts
	}
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return DestroyResult{}, err
	}
	defer unlock()
	var res DestroyResult
	if !o.KeepRunning {
		if _, err := h.stopProcesses(ctx, op); err != nil {
			return res, err
		}
	}
	if !o.Discard {
		cpo, _ := driverCheckpoint(op, nil, "grove: final checkpoint before destroy")
		cpo.Scan = true
		cp, err := h.h.Checkpoint(ctx, cpo)
		if err != nil {
			return DestroyResult{}, wrap(op, h.name, err)
		}
		if cp.New {
			res.Final = &cp
		}
		if err := unkept(op, h.name, cp); err != nil {
			return res, err
		}
	}
	id := h.h.Info().ID
	if err := h.h.Destroy(ctx, driverDestroy(&o)); err != nil {
		return res, wrap(op, h.name, err)
	}
	h.ws.releasePorts(id)
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	if h.ownsWS {
		h.ws.closeOnce()
	}
	return res, nil
}

// Close releases the head and its isolation lock, waiting for a
// serialized call in progress on it to finish (Status and the FS's calls
// take no lock: they fail once the head is closed). It never deletes
// anything. Later calls fail with FailedPrecondition, and so does a second
// Close. A head from Reopen also closes its workspace, unless the caller
// already did. Closing a read-only view closes the head.
func (h *Head) Close() error {
	const op = "close"
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return fail(grove.FailedPrecondition, op, h.name, "head is already closed")
	}
	h.closed = true
	h.mu.Unlock()
	unlock, _ := lockHead(context.Background(), h.key)
	defer unlock()
	err := wrap(op, h.name, h.h.Close())
	if h.ownsWS {
		if werr := h.ws.closeOnce(); err == nil {
			err = werr
		}
	}
	return err
}
