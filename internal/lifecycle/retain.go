package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/registry"
)

// Retain deletes the checkpoint refs of the heads reg records that policy
// p does not keep, as backend.RetentionPolicy says. Refs are deleted in
// one transaction per head, each only if it still points where it was read
// (a checkpoint taken meanwhile is never deleted), then git gc --auto runs
// (without pruning worktrees).
func Retain(ctx context.Context, rp *gitrepo.Repo, reg registry.Dir, p *backend.RetentionPolicy) (grove.RetentionReport, error) {
	const op = "gitbackend: retain"
	if p == nil || p.KeepLast < 0 || p.KeepWithin < 0 || (p.KeepLast == 0 && p.KeepWithin == 0) {
		return grove.RetentionReport{}, grove.Errorf(grove.InvalidArgument, op, "a retention policy needs KeepLast or KeepWithin, neither negative")
	}
	keep := map[string]bool{}
	for _, id := range p.Keep {
		keep[string(id)] = true
	}
	tips, err := rp.Git(ctx, "for-each-ref", "--format=%(objectname)", "refs/heads/", "refs/tags/")
	if err != nil {
		return grove.RetentionReport{}, err
	}
	for _, t := range strings.Fields(tips) {
		keep[t] = true
	}
	all, err := reg.AllManifests()
	if err != nil {
		return grove.RetentionReport{}, grove.Errorf(grove.Internal, op, "%w", err)
	}
	now := time.Now()
	rep := grove.RetentionReport{DryRun: p.DryRun}
	for _, mf := range all {
		if mf.Creating {
			continue
		}
		cps, err := rp.Checkpoints(ctx, mf.ID, 0)
		if err != nil {
			return rep, err
		}
		if len(cps) == 0 {
			continue
		}
		hr := grove.HeadRetention{Head: mf.Name, HeadID: mf.ID}
		pinned, err := reg.RestoreTargets(mf.ID)
		if err != nil {
			// Which revisions the head was restored to is unknown (its
			// record was replaced): nothing of it is deleted.
			for _, cp := range cps {
				hr.Kept = append(hr.Kept, cp.ID)
			}
			rep.Heads = append(rep.Heads, hr)
			continue
		}
		var ops []string
		for i, cp := range cps {
			id := string(cp.ID)
			kept := i == 0 || i < p.KeepLast || keep[id] || pinned[id] ||
				(p.KeepWithin > 0 && now.Sub(cp.Time) < p.KeepWithin)
			if kept {
				hr.Kept = append(hr.Kept, cp.ID)
				continue
			}
			hr.Deleted = append(hr.Deleted, cp.ID)
			ops = append(ops, fmt.Sprintf("delete %s %s", cp.Ref, cp.ID))
		}
		if len(ops) > 0 && !p.DryRun {
			if err := deleteRefs(ctx, rp, reg, mf.Name, ops); err != nil {
				return rep, err
			}
		}
		rep.Heads = append(rep.Heads, hr)
	}
	if !p.DryRun {
		_, _ = rp.Git(ctx, "-c", "gc.worktreePruneExpire=never", "gc", "--auto", "--quiet")
	}
	return rep, nil
}

// deleteRefs runs one ref transaction of delete ops under the repository
// lock; a ref that moved meanwhile fails it whole with Conflict.
func deleteRefs(ctx context.Context, rp *gitrepo.Repo, reg registry.Dir, head string, ops []string) error {
	rl, err := lock.Acquire(ctx, reg.RepoLock(), "retain "+head)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if err := rp.UpdateRefs(ctx, ops); err != nil {
		if c := grove.CodeOf(err); c == grove.Canceled || c == grove.Busy {
			return err
		}
		return &grove.Error{Code: grove.Conflict, Op: "gitbackend: retain", Head: head,
			Err: fmt.Errorf("a checkpoint ref moved while retention ran; nothing of this head was deleted: %w", err)}
	}
	return nil
}
