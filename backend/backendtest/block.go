package backendtest

import (
	"context"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendutil"
)

// blocker parks the next call of a driver method that a case names, so that
// the case can cancel the call while the driver is running it. The suite
// wraps every backend a harness makes in a blockingBackend, whose
// workspaces and heads are wrapped too, instead of asking drivers for a
// test hook. It is backendutil.CallBlocker, which third-party harnesses
// can use the same way. The zero value is ready to use; it is safe for
// concurrent use.
type blocker struct{ backendutil.CallBlocker }

// blockNextCall makes the next call of driver method op (such as
// "Checkpoint"; SetArchived of a workspace and of a head share the name)
// park until the call's context ends. The call then reaches the driver with
// that ended context, so the caller gets the driver's own answer: by the
// Backend contract, a Canceled *grove.Error wrapping the context's error.
// A driver that ignores the cancellation and succeeds is seen to. The
// returned channel is closed once the call is parked.
func (b *blocker) blockNextCall(op string) <-chan struct{} { return b.BlockNextCall(op) }

// park waits for ctx to end if blockNextCall asked for op, and returns at
// once otherwise; the call then goes on with ctx, ended or not.
func (b *blocker) park(ctx context.Context, op string) { _ = b.Park(ctx, op) }

// workspace wraps ws, keeping nil as nil.
func (b *blocker) workspace(ws backend.Workspace) backend.Workspace {
	if ws == nil {
		return nil
	}
	return &blockingWorkspace{Workspace: ws, blocks: b}
}

// head wraps h, keeping nil as nil.
func (b *blocker) head(h backend.Head) backend.Head {
	if h == nil {
		return nil
	}
	return &blockingHead{Head: h, blocks: b}
}

// blockingBackend passes every call through to the backend a harness made,
// parking first a call its blocker names. ID, Capabilities, As and Close
// are the inner backend's own; the workspaces and heads it returns, from
// Reopen too, are wrapped in turn.
type blockingBackend struct {
	backend.Backend
	blocks *blocker
}

var _ backend.Backend = (*blockingBackend)(nil)

func (b *blockingBackend) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	b.blocks.park(ctx, "OpenWorkspace")
	ws, err := b.Backend.OpenWorkspace(ctx, locator, opts)
	return b.blocks.workspace(ws), err
}

func (b *blockingBackend) Reopen(ctx context.Context, bind grove.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	b.blocks.park(ctx, "Reopen")
	ws, h, err := b.Backend.Reopen(ctx, bind, opts)
	return b.blocks.workspace(ws), b.blocks.head(h), err
}

// blockingWorkspace is a workspace of a blockingBackend. Info and Close are
// the inner workspace's own.
type blockingWorkspace struct {
	backend.Workspace
	blocks *blocker
}

var _ backend.Workspace = (*blockingWorkspace)(nil)

func (w *blockingWorkspace) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	w.blocks.park(ctx, "CreateHead")
	h, err := w.Workspace.CreateHead(ctx, spec)
	return w.blocks.head(h), err
}

func (w *blockingWorkspace) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	w.blocks.park(ctx, "OpenHead")
	h, err := w.Workspace.OpenHead(ctx, name, opts)
	return w.blocks.head(h), err
}

func (w *blockingWorkspace) Heads(ctx context.Context) ([]grove.HeadInfo, error) {
	w.blocks.park(ctx, "Heads")
	return w.Workspace.Heads(ctx)
}

func (w *blockingWorkspace) SetArchived(ctx context.Context, id grove.HeadID, archived bool) error {
	w.blocks.park(ctx, "SetArchived")
	return w.Workspace.SetArchived(ctx, id, archived)
}

func (w *blockingWorkspace) Materialize(ctx context.Context, at grove.Rev, dir string) error {
	w.blocks.park(ctx, "Materialize")
	return w.Workspace.Materialize(ctx, at, dir)
}

// blockingHead is a head of a blockingBackend. Info, Binding, FS and Close
// are the inner head's own.
type blockingHead struct {
	backend.Head
	blocks *blocker
}

var _ backend.Head = (*blockingHead)(nil)

func (h *blockingHead) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	h.blocks.park(ctx, "Checkpoint")
	return h.Head.Checkpoint(ctx, opts)
}

func (h *blockingHead) Restore(ctx context.Context, to grove.Rev) (backend.RestoreResult, error) {
	h.blocks.park(ctx, "Restore")
	return h.Head.Restore(ctx, to)
}

func (h *blockingHead) Log(ctx context.Context, opts *backend.LogOptions) ([]grove.Checkpoint, error) {
	h.blocks.park(ctx, "Log")
	return h.Head.Log(ctx, opts)
}

func (h *blockingHead) Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error) {
	h.blocks.park(ctx, "Commits")
	return h.Head.Commits(ctx, since)
}

func (h *blockingHead) Status(ctx context.Context) (grove.Status, error) {
	h.blocks.park(ctx, "Status")
	return h.Head.Status(ctx)
}

func (h *blockingHead) Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error) {
	h.blocks.park(ctx, "Diff")
	return h.Head.Diff(ctx, from, to)
}

func (h *blockingHead) SetArchived(ctx context.Context, archived bool) error {
	h.blocks.park(ctx, "SetArchived")
	return h.Head.SetArchived(ctx, archived)
}

func (h *blockingHead) Destroy(ctx context.Context, opts *backend.DestroyOptions) error {
	h.blocks.park(ctx, "Destroy")
	return h.Head.Destroy(ctx, opts)
}

// SetSparse is the inner head's, for a head that has it (a
// backend.Sparser), and Unimplemented otherwise.
func (h *blockingHead) SetSparse(ctx context.Context, set []string) error {
	h.blocks.park(ctx, "SetSparse")
	if s, ok := h.Head.(backend.Sparser); ok {
		return s.SetSparse(ctx, set)
	}
	return grove.Errorf(grove.Unimplemented, "backendtest: set sparse", "the head is no backend.Sparser")
}
