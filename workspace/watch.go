package workspace

import (
	"context"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
)

// Watch records, as this head's baseline, what of its repository an agent
// without a sandbox could change to act on the user's own tools: the
// configuration that names commands, the hooks, info/, the refs outside
// grove's heads (see backend.Watcher). The engine watches every session's
// head. A backend that cannot is Unimplemented; a read-only view is
// PermissionDenied.
func (h *Head) Watch(ctx context.Context) error {
	const op = "watch"
	w, err := h.watcher(ctx, op)
	if err != nil {
		return err
	}
	return wrap(op, h.name, w.Watch(ctx))
}

// Tampered lists what differs from the head's baseline (nothing without
// one), as Watch says.
func (h *Head) Tampered(ctx context.Context) ([]grove.Tamper, error) {
	const op = "tampered"
	w, err := h.watcher(ctx, op)
	if err != nil {
		return nil, err
	}
	t, err := w.Tampered(ctx)
	return t, wrap(op, h.name, err)
}

// EndWatch ends the head's watch and returns what differs from its
// baseline: a baseline nothing differs from is forgotten; one something
// differs from is kept for Workspace.Reconcile, which reports each change
// (FindingTampered) and, with Fix, puts back what the baseline held.
func (h *Head) EndWatch(ctx context.Context) ([]grove.Tamper, error) {
	const op = "end watch"
	w, err := h.watcher(ctx, op)
	if err != nil {
		return nil, err
	}
	t, err := w.EndWatch(ctx)
	return t, wrap(op, h.name, err)
}

func (h *Head) watcher(ctx context.Context, op string) (backend.Watcher, error) {
	if err := ctxErr(ctx, op, h.name); err != nil {
		return nil, err
	}
	if err := h.writable(op); err != nil {
		return nil, err
	}
	if err := h.checkOpen(op); err != nil {
		return nil, err
	}
	w, ok := h.h.(backend.Watcher)
	if !ok {
		return nil, fail(grove.Unimplemented, op, h.name, "backend %s does not watch its repository", h.ws.b.ID())
	}
	return w, nil
}
