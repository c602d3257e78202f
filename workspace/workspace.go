package workspace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/sparse"
)

// Workspace is an open workspace: a project's lineage of heads. It is safe
// for concurrent use.
//
// A Workspace reached through a read-only head (Head.ReadOnly) is itself
// read-only: it lists heads and materializes revisions, opens heads only as
// read-only views, refuses to create, attach, fork into or archive with
// PermissionDenied, and does not hand out its Backend. Read-only is a
// guard on what grove's API lets a holder do, not a sandbox against code
// in the same process: that code can reach the head's directory on the
// host (HeadInfo.Root) like any other.
type Workspace struct {
	*wsCore
	readOnly bool
}

// wsCore is the state every view of one open workspace shares.
type wsCore struct {
	b        backend.Backend
	ws       backend.Workspace
	sandbox  grove.Sandbox // where commands on head content run
	services *Services     // OpenOptions.Services: nil for none

	mu     sync.Mutex
	closed bool
}

// Open opens the workspace that locator names in backend b (for the Git
// backend: any path inside a repository). opts may be nil. A locator that
// names nothing is NotFound.
func Open(ctx context.Context, b Backend, locator string, opts *OpenOptions) (*Workspace, error) {
	const op = "open"
	if err := ctxErr(ctx, op, ""); err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fail(grove.InvalidArgument, op, "", "nil backend")
	}
	if locator == "" {
		return nil, fail(grove.InvalidArgument, op, "", "empty locator")
	}
	if opts != nil && opts.Remote != nil && !b.Capabilities().Remote {
		return nil, fail(grove.Unimplemented, op, "", "backend %s does not push to a remote", b.ID())
	}
	d := driverOpen(opts)
	if err := checkSandbox(b, op, "", d.Sandbox); err != nil {
		return nil, err
	}
	var svc *Services
	if opts != nil {
		svc = opts.Services
	}
	core, err := newCore(op, b, *d.Sandbox, svc)
	if err != nil {
		return nil, err
	}
	d.HeadEnv = core.hookEnv()
	ws, err := b.OpenWorkspace(ctx, locator, d)
	if err != nil {
		return nil, wrap(op, "", err)
	}
	core.ws = ws
	return &Workspace{wsCore: core}, nil
}

// Info returns the workspace's identity. It works after Close.
func (w *Workspace) Info() grove.WorkspaceInfo { return w.ws.Info() }

// Backend returns the backend the workspace was opened with, or nil for
// a read-only view: through the backend any head could be reopened
// writable.
func (w *Workspace) Backend() Backend {
	if w.readOnly {
		return nil
	}
	return w.b
}

// IsReadOnly reports whether the workspace is a read-only view.
func (w *Workspace) IsReadOnly() bool { return w.readOnly }

// writable fails with PermissionDenied on a read-only view.
func (w *Workspace) writable(op, head string) error {
	if w.readOnly {
		return fail(grove.PermissionDenied, op, head, "the workspace was reached through a read-only head")
	}
	return nil
}

// check fails once the workspace is closed or ctx has ended.
func (w *Workspace) check(ctx context.Context, op string) error {
	if err := ctxErr(ctx, op, ""); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fail(grove.FailedPrecondition, op, "", "workspace is closed")
	}
	return nil
}

// NewHead starts describing a new head named name; Create makes it. By
// default the head is isolated, starts from the workspace's current HEAD,
// and gets the branch grove/<name>.
func (w *Workspace) NewHead(name string) *HeadBuilder {
	return &HeadBuilder{w: w, spec: backend.HeadSpec{Name: name}}
}

// Attach creates a shared head over dir, an existing checkout of the
// workspace that the user owns: checkpoints go to private refs only, a
// restore writes files only, and destroying the head only forgets it.
// Backends without Capabilities.Attach answer Unimplemented.
func (w *Workspace) Attach(ctx context.Context, name, dir string) (*Head, error) {
	return w.NewHead(name).Attach(dir).Create(ctx)
}

// OpenHead opens the existing head called name, taking its isolation lock if
// it is isolated: a second holder gets AlreadyBound. An unknown or destroyed
// name is NotFound; an archived head is Archived unless opts.AllowArchived,
// which unarchives it (refused with PermissionDenied on a read-only
// workspace). With opts.ReadOnly it takes no lock and returns a read-only
// view; with opts.Recreate a head whose directory is gone is rebuilt (see
// ReopenOptions.Recreate). opts may be nil. On a read-only workspace the
// head is returned as a read-only view.
func (w *Workspace) OpenHead(ctx context.Context, name string, opts *ReopenOptions) (*Head, error) {
	const op = "open"
	if err := w.check(ctx, op); err != nil {
		return nil, err
	}
	if err := validName(name); err != nil {
		return nil, fail(grove.InvalidArgument, op, name, "%v", err)
	}
	if err := opts.check(op, name); err != nil {
		return nil, err
	}
	if opts != nil && opts.AllowArchived {
		if err := w.writable(op, name); err != nil {
			return nil, err
		}
	}
	var h backend.Head
	err := waitBound(ctx, opts, func() (err error) {
		h, err = w.ws.OpenHead(ctx, name, driverReopen(opts))
		return err
	})
	if err != nil {
		return nil, wrap(op, name, noRecreate(w.b, opts, err))
	}
	hd := newHead(w, h, false)
	if w.readOnly || (opts != nil && opts.ReadOnly) {
		hd = hd.ReadOnly()
	}
	return hd, nil
}

// Relocate opens here the head b names, rebuilding it in this clone from
// what its clone pushed to the workspace's remote when it lives in
// another (see backend.Relocator): same head ID, name, branch and access,
// at a new directory under the workspace's heads directory, with the files
// of the head's last pushed checkpoint, and a new binding (Head.Binding)
// that the caller persists in place of b. A head that lives in this clone
// opens as Reopen opens it (RelocateResult.Relocated unset). opts'
// ReadOnly is InvalidArgument; its Setup and Teardown are ignored (the
// workspace's run). A backend without Capabilities.Remote is
// Unimplemented; the other errors are Relocator's.
func (w *Workspace) Relocate(ctx context.Context, b grove.Binding, opts *ReopenOptions) (*Head, grove.RelocateResult, error) {
	const op = "relocate"
	if err := w.check(ctx, op); err != nil {
		return nil, grove.RelocateResult{}, err
	}
	if err := w.writable(op, ""); err != nil {
		return nil, grove.RelocateResult{}, err
	}
	if opts != nil && opts.ReadOnly {
		return nil, grove.RelocateResult{}, fail(grove.InvalidArgument, op, "", "a relocated head is opened to be written: ReadOnly is not an option")
	}
	rl, ok := w.ws.(backend.Relocator)
	if !ok {
		return nil, grove.RelocateResult{}, fail(grove.Unimplemented, op, "", "backend %s does not relocate heads", w.b.ID())
	}
	h, res, err := rl.Relocate(ctx, b, driverReopen(opts))
	if err != nil {
		return nil, grove.RelocateResult{}, wrap(op, "", err)
	}
	return newHead(w, h, false), res, nil
}

// Heads lists the workspace's live and archived heads, ordered by name.
func (w *Workspace) Heads(ctx context.Context) ([]grove.HeadInfo, error) {
	const op = "heads"
	if err := w.check(ctx, op); err != nil {
		return nil, err
	}
	hs, err := w.ws.Heads(ctx)
	return hs, wrap(op, "", err)
}

// SetArchived archives or unarchives the head called name, whether or not
// anyone holds it. An archived head keeps its files and cannot be opened or
// reopened until it is unarchived; a holder that has it open keeps working.
// Archiving stops the processes grove started in the head first (see
// Head.StopProcesses). An unknown or destroyed name is NotFound.
func (w *Workspace) SetArchived(ctx context.Context, name string, archived bool) error {
	return w.SetArchivedWith(ctx, name, archived, nil)
}

// SetArchivedWith is SetArchived as opts say (nil: as SetArchived).
func (w *Workspace) SetArchivedWith(ctx context.Context, name string, archived bool, opts *ArchiveOptions) error {
	const op = "set archived"
	if err := w.writable(op, name); err != nil {
		return err
	}
	hi, err := w.headNamed(ctx, op, name)
	if err != nil {
		return err
	}
	if archived && (opts == nil || !opts.KeepRunning) {
		if _, err := stopProcesses(ctx, op, hi); err != nil {
			return err
		}
	}
	return wrap(op, name, w.ws.SetArchived(ctx, hi.ID, archived))
}

// Materialize writes the tree of revision at into dir, which must be empty
// or absent and not inside a head. The files are byte-identical to the
// checkpoint, modes and symlinks included. A non-empty dir is
// FailedPrecondition and is left untouched.
func (w *Workspace) Materialize(ctx context.Context, at grove.Rev, dir string) error {
	const op = "materialize"
	if err := w.check(ctx, op); err != nil {
		return err
	}
	if at == "" {
		return fail(grove.InvalidArgument, op, "", "empty revision")
	}
	if dir == "" {
		return fail(grove.InvalidArgument, op, "", "empty directory")
	}
	return wrap(op, "", w.ws.Materialize(ctx, at, dir))
}

// Close closes the workspace (every view of it); later calls fail with
// FailedPrecondition, and so does a second Close. Heads opened from it stay
// usable until they are closed, except Fork, which needs the workspace.
// Close never deletes anything and does not close the backend.
func (w *Workspace) Close() error {
	const op = "close"
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return fail(grove.FailedPrecondition, op, "", "workspace is already closed")
	}
	w.closed = true
	w.mu.Unlock()
	return wrap(op, "", w.ws.Close())
}

// closeOnce closes the workspace unless it is already closed.
func (c *wsCore) closeOnce() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	return wrap("close", "", c.ws.Close())
}

// Reconcile compares the workspace's records with what is on disk and in
// git — heads whose directories were deleted or moved by hand,
// registrations without directories, worktree directories without
// registrations, interrupted creates and destroys, lock files no live
// process holds, heads with files no checkpoint holds — and reports each
// as a Finding. With opts.Fix it also repairs what it can without losing
// a file no checkpoint has (each FindingKind says how; a failed fix is
// reported on its Finding). A head another process is working on is left
// alone. opts may be nil. Backends with nothing to reconcile answer
// Unimplemented; a read-only view answers PermissionDenied with Fix.
func (w *Workspace) Reconcile(ctx context.Context, opts *ReconcileOptions) (grove.ReconcileReport, error) {
	const op = "reconcile"
	if err := w.check(ctx, op); err != nil {
		return grove.ReconcileReport{}, err
	}
	if opts != nil && opts.Fix {
		if err := w.writable(op, ""); err != nil {
			return grove.ReconcileReport{}, err
		}
	}
	m, ok := w.ws.(backend.Maintainer)
	if !ok {
		return grove.ReconcileReport{}, fail(grove.Unimplemented, op, "", "backend %s has nothing to reconcile", w.b.ID())
	}
	rep, err := m.Reconcile(ctx, driverReconcile(opts))
	return rep, wrap(op, "", err)
}

// Retain deletes the private checkpoint refs p does not keep, in every
// head of the workspace (destroyed heads' included), and reports what it
// kept and deleted per head; with p.DryRun it deletes nothing. A restore
// target is never deleted. Backends that cannot delete checkpoints answer
// Unimplemented; a read-only view answers PermissionDenied unless DryRun.
func (w *Workspace) Retain(ctx context.Context, p *RetentionPolicy) (grove.RetentionReport, error) {
	const op = "retain"
	if err := w.check(ctx, op); err != nil {
		return grove.RetentionReport{}, err
	}
	dp, err := driverRetain(op, p)
	if err != nil {
		return grove.RetentionReport{}, err
	}
	if !dp.DryRun {
		if err := w.writable(op, ""); err != nil {
			return grove.RetentionReport{}, err
		}
	}
	m, ok := w.ws.(backend.Maintainer)
	if !ok {
		return grove.RetentionReport{}, fail(grove.Unimplemented, op, "", "backend %s cannot delete checkpoints", w.b.ID())
	}
	rep, err := m.Retain(ctx, dp)
	return rep, wrap(op, "", err)
}

// HeadBuilder describes a head to create. Its methods return the builder so
// that calls chain: ws.NewHead("agent-1").From("v1.2").Create(ctx).
type HeadBuilder struct {
	w        *Workspace
	spec     backend.HeadSpec
	isolated bool // Isolated was asked for explicitly
}

// From starts the head from rev, a branch, tag, commit or checkpoint.
func (b *HeadBuilder) From(rev grove.Rev) *HeadBuilder { b.spec.From = rev; return b }

// Shared makes the head shared: many holders, compare-and-set writes.
func (b *HeadBuilder) Shared() *HeadBuilder {
	b.spec.Access = grove.Shared
	b.isolated = false
	return b
}

// Isolated makes the head isolated (the default): one holder at a time.
func (b *HeadBuilder) Isolated() *HeadBuilder {
	b.spec.Access = grove.Isolated
	b.isolated = true
	return b
}

// Branch names the head's branch instead of grove/<name>. A name git
// refuses for a branch (git check-ref-format --branch: "HEAD", "@", a
// leading '-', "..", "@{", an empty component, a component starting with
// '.' or ending in ".lock", and so on), or with a component over 250
// bytes, makes Create fail with InvalidArgument before the backend is
// called.
func (b *HeadBuilder) Branch(name string) *HeadBuilder { b.spec.Branch = name; return b }

// Dir places the head's directory at dir instead of under the workspace's
// heads directory.
func (b *HeadBuilder) Dir(dir string) *HeadBuilder { b.spec.Dir = dir; return b }

// Attach makes the head an attached head over dir, an existing checkout.
// Attached heads are always shared; Attach together with Isolated or From
// is InvalidArgument.
func (b *HeadBuilder) Attach(dir string) *HeadBuilder { b.spec.Attach = dir; return b }

// Sparse makes the head sparse: only dirs (slash paths from the top) are
// materialised, with every file at the top and directly in a directory on
// the way to one of them, as git's cone mode does; checkpoints keep the
// rest of the tree as the head's base had it, and a file written outside
// the set is captured like any other. No dirs is the top's files alone (as
// git sparse-checkout set with none); "." among them, the whole tree.
// A dir that is not a clean relative path inside the tree (a ".." or
// ".git" element, a leading "/", a glob character) is InvalidArgument at
// Create, and so is a sparse attached head; a backend without
// Capabilities.Sparse is Unimplemented.
func (b *HeadBuilder) Sparse(dirs ...string) *HeadBuilder {
	b.spec.Sparse = append([]string{}, dirs...)
	return b
}

// SparseFromMain gives the head the sparse set of the repository's main
// checkout, when it is a sparse checkout the backend can read (for the
// Git backend, a cone-mode one: git sparse-checkout set), and the whole
// tree otherwise; Sparse, called too, wins. It is read when the head is
// made: a head's set is its own record from then on.
func (b *HeadBuilder) SparseFromMain() *HeadBuilder {
	b.spec.SparseFromMain = true
	return b
}

// NoSubmodules leaves the head's submodules empty directories, as git
// worktree add does (and its forks', restores' and repairs'). By default
// a backend that can (the Git backend) checks each out at the commit the
// tree records, from the repository it already holds for it, fetching
// nothing.
func (b *HeadBuilder) NoSubmodules() *HeadBuilder {
	b.spec.NoSubmodules = true
	return b
}

// Spec returns the HeadSpec the builder describes so far.
func (b *HeadBuilder) Spec() backend.HeadSpec { return b.spec }

// Create creates the head. A duplicate name or branch is AlreadyExists, a
// From that does not resolve is NotFound, a malformed name or branch is
// InvalidArgument, and a failed create leaves nothing behind. An isolated
// head is returned holding its isolation lock.
func (b *HeadBuilder) Create(ctx context.Context) (*Head, error) {
	const op = "create"
	spec := b.spec
	if err := b.w.check(ctx, op); err != nil {
		return nil, err
	}
	if err := b.w.writable(op, spec.Name); err != nil {
		return nil, err
	}
	if err := validName(spec.Name); err != nil {
		return nil, fail(grove.InvalidArgument, op, spec.Name, "%v", err)
	}
	if spec.Branch != "" {
		if err := validBranch(spec.Branch); err != nil {
			return nil, fail(grove.InvalidArgument, op, spec.Name, "%v", err)
		}
	}
	if spec.Attach != "" {
		if b.isolated {
			return nil, fail(grove.InvalidArgument, op, spec.Name, "an attached head is always shared, not isolated")
		}
		if spec.From != "" {
			return nil, fail(grove.InvalidArgument, op, spec.Name, "an attached head has no From revision")
		}
		if spec.Branch != "" || spec.Dir != "" {
			return nil, fail(grove.InvalidArgument, op, spec.Name, "an attached head keeps its checkout's branch and directory")
		}
		spec.Access = grove.Shared
	}
	if spec.Access == "" {
		spec.Access = grove.Isolated
	}
	if err := b.w.sparse(op, &spec); err != nil {
		return nil, err
	}
	h, err := b.w.ws.CreateHead(ctx, &spec)
	if err != nil {
		return nil, wrap(op, spec.Name, err)
	}
	return newHead(b.w, h, false), nil
}

// sparse normalises spec.Sparse (nil for the whole tree) and refuses what
// cannot be made of it.
func (w *Workspace) sparse(op string, spec *backend.HeadSpec) error {
	if spec.Sparse == nil {
		return nil
	}
	spec.SparseFromMain = false // Sparse wins
	set, err := sparse.New(spec.Sparse)
	switch {
	case err != nil:
		return fail(grove.InvalidArgument, op, spec.Name, "%v", err)
	case set != nil && spec.Attach != "":
		return fail(grove.InvalidArgument, op, spec.Name, "an attached head keeps its checkout as it is: it cannot be sparse")
	case set != nil && !w.b.Capabilities().Sparse:
		return fail(grove.Unimplemented, op, spec.Name, "the %s backend has no sparse heads", w.b.ID())
	}
	spec.Sparse = set
	return nil
}

// noRecreate turns err, the failure of an open that asked for Recreate
// from a backend without Capabilities.Recreate, into Unimplemented when
// the head was missing: the option was not honoured, and says so.
func noRecreate(b Backend, opts *ReopenOptions, err error) error {
	var be *grove.Error
	if opts == nil || !opts.Recreate || b.Capabilities().Recreate || !errors.As(err, &be) ||
		be.Code != grove.NotFound || be.Reason != grove.ReasonMissing {
		return err
	}
	return &grove.Error{Code: grove.Unimplemented, Op: be.Op, Head: be.Head, Path: be.Path, Reason: be.Reason,
		Err: fmt.Errorf("backend %s cannot recreate a missing head: %w", b.ID(), be.Err)}
}

// Reopen opens exactly the head that binding names, for a caller that holds
// only the binding (a harness resuming after a restart). It fails with
// BindingCorrupt for a malformed binding, IdentityMismatch (Reason backend)
// when the binding belongs to another backend, and otherwise as
// backend.Backend.Reopen says: it never returns a different or an empty
// head. The head owns the workspace it was found in: Head.Workspace returns
// it, and closing the head closes it. With opts.ReadOnly it takes no lock
// and returns a read-only view. opts may be nil.
func Reopen(ctx context.Context, b Backend, binding grove.Binding, opts *ReopenOptions) (*Head, error) {
	const op = "reopen"
	if err := ctxErr(ctx, op, string(binding.Head)); err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fail(grove.InvalidArgument, op, string(binding.Head), "nil backend")
	}
	if err := binding.Validate(); err != nil {
		return nil, wrap(op, string(binding.Head), err)
	}
	if binding.Backend != b.ID() {
		return nil, &grove.Error{Code: grove.IdentityMismatch, Op: opPrefix + op, Head: string(binding.Head),
			Reason: grove.ReasonBackend, Err: errorf("binding is for backend %q, not %q", binding.Backend, b.ID())}
	}
	if err := opts.check(op, string(binding.Head)); err != nil {
		return nil, err
	}
	if opts != nil && opts.Remote != nil && !b.Capabilities().Remote {
		return nil, fail(grove.Unimplemented, op, string(binding.Head), "backend %s does not push to a remote", b.ID())
	}
	d := driverReopen(opts)
	if err := checkSandbox(b, op, string(binding.Head), d.Sandbox); err != nil {
		return nil, err
	}
	var svc *Services
	if opts != nil {
		svc = opts.Services
	}
	core, err := newCore(op, b, *d.Sandbox, svc)
	if err != nil {
		return nil, err
	}
	d.HeadEnv = core.hookEnv()
	var ws backend.Workspace
	var h backend.Head
	err = waitBound(ctx, opts, func() (err error) {
		ws, h, err = b.Reopen(ctx, binding, d)
		return err
	})
	if err != nil {
		return nil, wrap(op, string(binding.Head), noRecreate(b, opts, err))
	}
	if got := h.Binding(); !got.Equal(binding) {
		_ = h.Close()
		_ = ws.Close()
		return nil, &grove.Error{Code: grove.IdentityMismatch, Op: opPrefix + op, Head: string(binding.Head),
			Reason: grove.ReasonHeadID, Err: errorf("backend reopened a head whose binding differs")}
	}
	core.ws = ws
	hd := newHead(&Workspace{wsCore: core}, h, true)
	if opts != nil && opts.ReadOnly {
		hd = hd.ReadOnly()
	}
	return hd, nil
}

// waitBound calls open until it answers anything but AlreadyBound, or
// opts.Wait has passed, or ctx has ended: an isolated head another holder
// has open for a moment is waited for.
func waitBound(ctx context.Context, opts *ReopenOptions, open func() error) error {
	var wait time.Duration
	if opts != nil {
		wait = opts.Wait
	}
	deadline := time.Now().Add(wait)
	pause := 10 * time.Millisecond
	for {
		err := open()
		if grove.CodeOf(err) != grove.AlreadyBound || !time.Now().Before(deadline) {
			return err
		}
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
	}
}
