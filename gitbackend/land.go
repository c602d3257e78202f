package gitbackend

import (
	"context"
	"path/filepath"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/land"
	"github.com/groveworks/grove/internal/lock"
)

var _ backend.Lander = (*head)(nil)

// Land implements backend.Lander (see internal/land).
func (h *head) Land(ctx context.Context, opts *backend.LandOptions) (grove.LandResult, error) {
	mf, err := h.enter(ctx, "Land")
	if err != nil {
		return grove.LandResult{}, err
	}
	return land.Land(ctx, landRepo{h.w}, land.Head{Name: mf.Name, Branch: mf.Branch, Base: mf.Base, Attached: mf.Attached}, opts)
}

// Patch implements backend.Lander (see internal/land).
func (h *head) Patch(ctx context.Context, from, to grove.Rev, opts *backend.PatchOptions) ([]byte, error) {
	mf, err := h.enter(ctx, "Patch")
	if err != nil {
		return nil, err
	}
	return land.Patch(ctx, landRepo{h.w}, land.Head{Name: mf.Name, Branch: mf.Branch, Base: mf.Base, Attached: mf.Attached}, from, to, opts)
}

// landRepo is a workspace's repository as land drives it.
type landRepo struct{ w *workspace }

func (r landRepo) Run(ctx context.Context, c gitcmd.Cmd) (string, error) { return r.w.repo.Run(ctx, c) }

func (r landRepo) Bytes(ctx context.Context, c gitcmd.Cmd) ([]byte, error) {
	return r.w.repo.Bytes(ctx, c)
}

func (r landRepo) Version() gitcmd.Version { return r.w.repo.Runner.Version() }

func (r landRepo) Resolve(ctx context.Context, op string, rev grove.Rev) (string, error) {
	return r.w.repo.Resolve(ctx, op, rev)
}

func (r landRepo) RefExists(name string) bool { return r.w.repo.RefExists(name) }

func (r landRepo) CheckBranchName(ctx context.Context, name string) error {
	return r.w.repo.CheckBranchName(ctx, name)
}

func (r landRepo) Lock(ctx context.Context, purpose string) (*lock.Lock, error) {
	return r.w.lockRepo(ctx, purpose)
}

func (r landRepo) UpdateRefs(ctx context.Context, ops []string) error {
	return r.w.repo.UpdateRefs(ctx, ops)
}

func (r landRepo) ManyFiles() bool { return r.w.repo.ManyFiles("") }
func (r landRepo) Common() string  { return r.w.repo.Common }
func (r landRepo) Main() string    { return r.w.repo.Main }

func (r landRepo) FinishCheckout(ctx context.Context, c gitcmd.Cmd) error {
	_, err := r.w.materializeLFS(ctx, r.w.runAs(c), c.Dir, filepath.Join(c.GitDir, "index"), nil)
	return err
}

func (r landRepo) RefreshLFS(ctx context.Context, c gitcmd.Cmd, blobs map[string]string) (bool, error) {
	return r.w.refreshLFS(ctx, c.Dir, filepath.Join(c.GitDir, "index"), blobs)
}

func (r landRepo) Promised() bool { return r.w.repo.Promised() }

func (r landRepo) Ensure(ctx context.Context, op string, pairs ...[2]string) error {
	return r.w.ensureTrees(ctx, op, nil, pairs...)
}

func (r landRepo) HeadAt(dir string) (string, bool) {
	mf, _ := r.w.insideHead(dir)
	if mf == nil {
		return "", false
	}
	return mf.Name, true
}
