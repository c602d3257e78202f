package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/regfile"
)

// restoresFile records, one full hash per line, every revision a head was
// restored to: retention always keeps them. It lies beside the head's
// manifest; what it says only ever makes retention keep more.
func (m meta) restoresFile(id grove.HeadID) string {
	return filepath.Join(m.headsDir(), string(id)+".restores")
}

// pinRestore records that head id was restored to commit. The file is
// rewritten whole (temporary file and rename), never opened for writing
// where it is: whatever an agent put at its path (a symlink, a FIFO) is
// replaced, not written through or waited on.
func (m meta) pinRestore(id grove.HeadID, commit string) error {
	pins, _ := m.restoreTargets(id) // an unreadable record starts again
	if pins[commit] {
		return nil
	}
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(pins)) {
		b.WriteString(c + "\n")
	}
	b.WriteString(commit + "\n")
	return writeFileAtomic(m.restoresFile(id), []byte(b.String()))
}

// maxRestoresFile bounds the record of a head's restore targets (25,000
// distinct targets).
const maxRestoresFile = 1 << 20

// restoreTargets reads what pinRestore recorded for head id (lines that
// are not full hashes are skipped). Something else than a regular file
// there, or one over maxRestoresFile, is an error.
func (m meta) restoreTargets(id grove.HeadID) (map[string]bool, error) {
	out := map[string]bool{}
	data, err := regfile.Read(m.restoresFile(id), maxRestoresFile)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); isFullHash(line) {
			out[line] = true
		}
	}
	return out, nil
}

// isFullHash reports whether s is 40 lowercase hex digits.
func isFullHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Retain implements backend.Maintainer: see backend.RetentionPolicy. Refs
// are deleted in one transaction per head, each only if it still points
// where it was read (a checkpoint taken meanwhile is never deleted), then
// git gc --auto runs (without pruning worktrees).
func (w *workspace) Retain(ctx context.Context, p *backend.RetentionPolicy) (grove.RetentionReport, error) {
	const op = "gitbackend: retain"
	if err := w.enter(ctx, "Retain"); err != nil {
		return grove.RetentionReport{}, err
	}
	if p == nil || p.KeepLast < 0 || p.KeepWithin < 0 || (p.KeepLast == 0 && p.KeepWithin == 0) {
		return grove.RetentionReport{}, grove.Errorf(grove.InvalidArgument, op, "a retention policy needs KeepLast or KeepWithin, neither negative")
	}
	keep := map[string]bool{}
	for _, id := range p.Keep {
		keep[string(id)] = true
	}
	tips, err := w.repo.git(ctx, "for-each-ref", "--format=%(objectname)", "refs/heads/", "refs/tags/")
	if err != nil {
		return grove.RetentionReport{}, err
	}
	for _, t := range strings.Fields(tips) {
		keep[t] = true
	}
	all, err := w.meta.allManifests()
	if err != nil {
		return grove.RetentionReport{}, grove.Errorf(grove.Internal, op, "%w", err)
	}
	now := time.Now()
	rep := grove.RetentionReport{DryRun: p.DryRun}
	for _, mf := range all {
		if mf.Creating {
			continue
		}
		cps, err := w.repo.checkpoints(ctx, mf.ID, 0)
		if err != nil {
			return rep, err
		}
		if len(cps) == 0 {
			continue
		}
		hr := grove.HeadRetention{Head: mf.Name, HeadID: mf.ID}
		pinned, err := w.meta.restoreTargets(mf.ID)
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
			ops = append(ops, fmt.Sprintf("delete %s %s", cp.ref, cp.ID))
		}
		if len(ops) > 0 && !p.DryRun {
			if err := w.deleteRefs(ctx, mf.Name, ops); err != nil {
				return rep, err
			}
		}
		rep.Heads = append(rep.Heads, hr)
	}
	if !p.DryRun {
		_, _ = w.repo.git(ctx, "-c", "gc.worktreePruneExpire=never", "gc", "--auto", "--quiet")
	}
	return rep, nil
}

// deleteRefs runs one ref transaction of delete ops under the repository
// lock; a ref that moved meanwhile fails it whole with Conflict.
func (w *workspace) deleteRefs(ctx context.Context, head string, ops []string) error {
	rl, err := w.lockRepo(ctx, "retain "+head)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if err := w.repo.updateRefs(ctx, ops); err != nil {
		if c := grove.CodeOf(err); c == grove.Canceled || c == grove.Busy {
			return err
		}
		return &grove.Error{Code: grove.Conflict, Op: "gitbackend: retain", Head: head,
			Err: fmt.Errorf("a checkpoint ref moved while retention ran; nothing of this head was deleted: %w", err)}
	}
	return nil
}
