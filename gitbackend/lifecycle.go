package gitbackend

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/lifecycle"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/transport"
)

// A head's lifecycle around the core (internal/lifecycle): its trashed
// directory deleted in the background, retention of its checkpoints.

// finishDestroys finishes the destroys that were interrupted (their
// manifest still says Destroying and nobody holds their head lock), then
// starts deleting whatever destroyed heads left in the trash. A destroy
// interrupted before its directory moved did not happen: its head stays
// live. Callers hold the repository lock.
func (w *workspace) finishDestroys() error {
	err := w.recoverInterrupted("finish an interrupted destroy", func(mf *registry.Manifest) bool { return mf.Destroying },
		func(mf *registry.Manifest) error { return w.finishDestroy(mf.ID) })
	if err != nil {
		return err
	}
	for _, p := range lifecycle.Trashed(w.meta) {
		w.b.trash.Delete(p)
	}
	return nil
}

// finishDestroy ends the interrupted destroy of head id; callers hold its
// head lock and the repository lock.
func (w *workspace) finishDestroy(id grove.HeadID) error {
	mf, err := w.meta.ReadManifest(id)
	if err != nil || !mf.Destroying {
		return nil // finished meanwhile
	}
	if _, err := os.Lstat(mf.Dir); err == nil {
		mf.Destroying = false // never moved: the head is whole
	} else {
		if err := w.removeAdmin(mf.Admin); err != nil {
			return &grove.Error{Code: grove.Internal, Op: "gitbackend: finish destroy", Head: mf.Name, Err: err}
		}
		mf.Destroying = false
		mf.State = grove.StateDestroyed
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: finish destroy", Head: mf.Name, Err: err}
	}
	return nil
}

// WaitDeletions waits until the background deletions of destroyed heads'
// directories this backend started have ended, or ctx ends (its error is
// returned then). Destroy returns before its head's files are deleted;
// a program that must see them gone (or exits and wants the disk space
// back now rather than at the next open of the workspace) calls this.
func (b *Backend) WaitDeletions(ctx context.Context) error { return b.trash.Wait(ctx) }

// Retain implements backend.Maintainer (see lifecycle.Retain).
func (w *workspace) Retain(ctx context.Context, p *backend.RetentionPolicy) (grove.RetentionReport, error) {
	if err := w.enter(ctx, "Retain"); err != nil {
		return grove.RetentionReport{}, err
	}
	rep, err := lifecycle.Retain(ctx, w.repo, w.meta, p)
	if err != nil || w.remote == nil {
		return rep, err
	}
	keep := map[string]bool{}
	for _, id := range p.Keep {
		keep[string(id)] = true
	}
	rep.Remote, err = w.remoteClient().RetainRemote(ctx, transport.RetainPolicy{KeepLast: p.KeepLast, KeepWithin: p.KeepWithin, DryRun: p.DryRun,
		Held: w.registeredHeads()}, keep)
	return rep, err
}

// registeredHeads is the heads a worktree registration of the repository
// holds, as each registration's own head-ID file says. An agent without a
// sandbox can rewrite that file too: forging a tombstone then takes two
// writes, and a head whose registration it broke no longer opens either.
func (w *workspace) registeredHeads() map[grove.HeadID]bool {
	regs := filepath.Join(w.repo.Common, "worktrees")
	entries, _ := os.ReadDir(regs)
	held := map[grove.HeadID]bool{}
	for _, e := range entries {
		if id, err := regfile.Read(filepath.Join(regs, e.Name(), headIDFile), registry.MaxSmallFile); err == nil {
			held[grove.HeadID(strings.TrimSpace(string(id)))] = true
		}
	}
	return held
}
