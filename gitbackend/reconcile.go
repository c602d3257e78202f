package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/lifecycle"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/seal"
)

var _ backend.Maintainer = (*workspace)(nil)

// Reconcile implements backend.Maintainer: it compares grove's manifests,
// git's worktree registrations, the heads' directories, the trash and the
// lock files, reports every mismatch, and with opts.Fix repairs each as
// its grove.FindingKind says. A head another process is working on (its
// head lock is held) is left alone. Nothing that could hold a file no
// checkpoint has is ever deleted: a missing head is rebuilt, an
// unregistered one registered again around its files, a stray directory
// only reported.
func (w *workspace) Reconcile(ctx context.Context, opts *backend.ReconcileOptions) (grove.ReconcileReport, error) {
	const op = "gitbackend: reconcile"
	if err := w.enter(ctx, "Reconcile"); err != nil {
		return grove.ReconcileReport{}, err
	}
	var o backend.ReconcileOptions
	if opts != nil {
		o = *opts
	}
	if o.StaleLockAge <= 0 {
		o.StaleLockAge = grove.DefaultStaleLockAge
	}
	r := &reconciler{w: w, ctx: ctx, o: o, regs: filepath.Join(w.repo.Common, "worktrees")}
	all, err := w.meta.AllManifests()
	if err != nil {
		return grove.ReconcileReport{}, grove.Errorf(grove.Internal, op, "%w", err)
	}
	owned := map[string]bool{} // registrations that are live heads'
	for _, mf := range all {
		if err := ctx.Err(); err != nil {
			return r.rep, grove.ContextError(ctx, op)
		}
		switch {
		case mf.Creating:
			r.interruptedCreate(mf)
		case mf.Destroying:
			r.interruptedDestroy(mf)
		case mf.Live() && !mf.Attached:
			owned[mf.Admin] = true
			r.head(mf)
		}
	}
	for _, p := range lifecycle.Trashed(w.meta) {
		r.add(grove.Finding{Kind: grove.FindingInterruptedDestroy, Path: p,
			Detail: "a destroyed head's files are still in the trash"}, func() error {
			err := os.RemoveAll(p)
			_ = os.Remove(filepath.Dir(p))
			return err
		})
	}
	r.registrations(owned)
	r.strays(all)
	r.deadHolders(all)
	r.watches(all)
	if err := ctx.Err(); err != nil {
		return r.rep, grove.ContextError(ctx, op)
	}
	return r.rep, nil
}

// reconciler is one Reconcile run.
type reconciler struct {
	w    *workspace
	ctx  context.Context
	o    backend.ReconcileOptions
	regs string // <common>/worktrees
	rep  grove.ReconcileReport
}

// add reports f, first running fix when fixing.
func (r *reconciler) add(f grove.Finding, fix func() error) {
	if r.o.Fix && fix != nil {
		if err := fix(); err != nil {
			f.FixError = err.Error()
		} else {
			f.Fixed = true
		}
	} else if r.o.Fix {
		f.FixError = "not fixed: " + notFixed[f.Kind]
	}
	r.rep.Findings = append(r.rep.Findings, f)
}

// notFixed says why a finding of a kind is never fixed.
var notFixed = map[grove.FindingKind]string{
	grove.FindingUncaptured:     "it is work no checkpoint holds yet; checkpoint it, or destroy the head with Discard",
	grove.FindingStrayDirectory: "it may hold files no checkpoint has; move or delete it yourself",
}

// withHeadLock runs f holding head id's lock and the repository lock, or
// reports that the head is busy.
func (r *reconciler) withHeadLock(id grove.HeadID, f func() error) error {
	hl, err := lock.TryLock(r.w.meta.HeadLock(id), "reconcile")
	if err != nil {
		return fmt.Errorf("another process is working on the head: %w", err)
	}
	defer hl.Unlock()
	rl, err := r.w.lockRepo(r.ctx, "reconcile")
	if err != nil {
		return err
	}
	defer rl.Unlock()
	return f()
}

// busy reports whether a process holds head id's lock.
func (r *reconciler) busy(id grove.HeadID) bool {
	hl, err := lock.TryLock(r.w.meta.HeadLock(id), "reconcile")
	if err != nil {
		return true
	}
	_ = hl.Unlock()
	return false
}

func (r *reconciler) interruptedCreate(mf *registry.Manifest) {
	if r.busy(mf.ID) {
		return // being created now
	}
	r.add(grove.Finding{Kind: grove.FindingInterruptedCreate, Head: mf.Name, HeadID: mf.ID, Path: mf.Dir,
		Detail: "a create that never finished"}, func() error {
		return r.withHeadLock(mf.ID, func() error {
			if now, err := r.w.meta.ReadManifest(mf.ID); err != nil || !now.Creating {
				return nil
			}
			return r.w.undo(r.ctx, mf, true)
		})
	})
}

func (r *reconciler) interruptedDestroy(mf *registry.Manifest) {
	if r.busy(mf.ID) {
		return
	}
	r.add(grove.Finding{Kind: grove.FindingInterruptedDestroy, Head: mf.Name, HeadID: mf.ID, Path: mf.Dir,
		Detail: "a destroy that never finished"}, func() error {
		return r.withHeadLock(mf.ID, func() error { return r.w.finishDestroy(mf.ID) })
	})
}

// head checks one live head grove made: its registration, its
// directory, its locks, and its uncaptured files.
func (r *reconciler) head(mf *registry.Manifest) {
	if r.busy(mf.ID) {
		return
	}
	find := func(kind grove.FindingKind, path, format string, args ...any) grove.Finding {
		return grove.Finding{Kind: kind, Head: mf.Name, HeadID: mf.ID, Path: path, Detail: fmt.Sprintf(format, args...)}
	}
	if filepath.Dir(mf.Admin) != r.regs {
		cand := filepath.Join(r.regs, filepath.Base(mf.Admin))
		// The head's own .git file must still name the registration by
		// its old path: evidence from the head, not only from the common
		// git dir an agent can write.
		old, gerr := gitfmt.ReadGitFile(mf.Dir)
		if id, err := regfile.Read(filepath.Join(cand, headIDFile), registry.MaxSmallFile); err == nil && strings.TrimSpace(string(id)) == string(mf.ID) &&
			gerr == nil && old == mf.Admin {
			r.add(find(grove.FindingMovedRepository, mf.Dir, "the head is registered at %s, where the repository was before it moved", mf.Admin), func() error {
				return r.withHeadLock(mf.ID, func() error { return r.w.relink(mf, cand) })
			})
			return
		}
		r.add(find(grove.FindingUnregistered, mf.Dir, "the head's recorded git dir %s is not this repository's", mf.Admin), nil)
		return
	}
	fi, err := os.Lstat(mf.Dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || mf.Rebuilding:
		r.add(find(grove.FindingMissingHead, mf.Dir, "the head's directory is gone; fixing rebuilds it from branch %s", mf.Branch), func() error {
			return r.w.recreate(r.ctx, "gitbackend: reconcile", mf.ID)
		})
		return
	case err != nil:
		r.add(find(grove.FindingMissingHead, mf.Dir, "%v", err), nil)
		return
	case !fi.IsDir():
		r.add(find(grove.FindingStrayDirectory, mf.Dir, "something that is not a directory took the head's place"), nil)
		return
	}
	vouched := r.w.vouchedDir(mf)
	outside := fmt.Errorf("%s lies outside the heads directory %s: not repaired on the word of grove's records alone", mf.Dir, r.w.headsDir)
	if _, err := os.Stat(filepath.Join(mf.Admin, "HEAD")); err != nil {
		r.add(find(grove.FindingUnregistered, mf.Dir, "git no longer registers the head's directory (its registration %s is gone)", mf.Admin), func() error {
			if !vouched {
				return outside
			}
			return r.withHeadLock(mf.ID, func() error { return r.w.reregister(r.ctx, mf) })
		})
	} else if admin, err := gitfmt.ReadGitFile(mf.Dir); err != nil || admin != mf.Admin {
		r.add(find(grove.FindingUnregistered, mf.Dir, "the head's .git file no longer names its registration %s", mf.Admin), func() error {
			if !vouched {
				return outside
			}
			return r.withHeadLock(mf.ID, func() error { return r.w.relink(mf, mf.Admin) })
		})
	}
	r.locks(mf)
	h, err := r.w.open(r.ctx, "gitbackend: reconcile", mf, &backend.ReopenOptions{ReadOnly: true})
	if err != nil {
		return // reported above, or busy
	}
	st, err := h.Status(r.ctx)
	_ = h.Close()
	if err == nil && st.Dirty {
		r.add(find(grove.FindingUncaptured, mf.Dir, "%d path(s) differ from the head's last checkpoint", len(st.Changes)), nil)
	}
}

// locks reports the lock files of head mf that nobody holds: the marker
// of a grove operation that was interrupted, and git lock files older
// than StaleLockAge (git has no owner to ask: age is its own test).
func (r *reconciler) locks(mf *registry.Manifest) {
	find := func(path, detail string) grove.Finding {
		return grove.Finding{Kind: grove.FindingStaleLock, Head: mf.Name, HeadID: mf.ID, Path: path, Detail: detail}
	}
	remove := func(path string) func() error {
		return func() error {
			return r.withHeadLock(mf.ID, func() error {
				err := os.Remove(path)
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			})
		}
	}
	if _, err := os.Lstat(r.w.meta.OpMarker(mf.ID)); err == nil {
		r.add(find(r.w.meta.OpMarker(mf.ID), "a grove operation on the head was interrupted"), func() error {
			return r.withHeadLock(mf.ID, func() error {
				_ = os.Remove(filepath.Join(mf.Admin, indexLock))
				return os.Remove(r.w.meta.OpMarker(mf.ID))
			})
		})
	}
	candidates := []string{filepath.Join(mf.Admin, indexLock), filepath.Join(mf.Admin, "HEAD.lock")}
	if mf.Branch != "" {
		candidates = append(candidates, filepath.Join(r.w.repo.Common, "refs", "heads", filepath.FromSlash(mf.Branch)+".lock"))
	}
	for _, p := range candidates {
		fi, err := os.Lstat(p)
		if err != nil || time.Since(fi.ModTime()) < r.o.StaleLockAge {
			continue
		}
		r.add(find(p, fmt.Sprintf("a git lock file %s old, left by a git process that was killed", time.Since(fi.ModTime()).Round(time.Second))), remove(p))
	}
}

// deadHolders reports grove's lock files whose holder died holding them
// (the kernel released the lock; the holder's record is left). Fixing
// erases the record.
func (r *reconciler) deadHolders(all []*registry.Manifest) {
	dir := filepath.Dir(r.w.meta.RepoLock())
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	names := map[string]string{}
	for _, mf := range all {
		names[string(mf.ID)] = mf.Name
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		o, dead := lock.Dead(p)
		if !dead {
			continue
		}
		id := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		f := grove.Finding{Kind: grove.FindingStaleLock, Path: p,
			Detail: fmt.Sprintf("left by %s, which died holding it (the lock is free; only its record is left)", o)}
		if name, ok := names[id]; ok {
			f.Head, f.HeadID = name, grove.HeadID(id)
		}
		r.add(f, func() error { return lock.Clear(p) })
	}
}

// registrations reports git's worktree registrations whose directory is
// gone and that are no live head's (a locked one is the user's to keep).
func (r *reconciler) registrations(owned map[string]bool) {
	ents, err := os.ReadDir(r.regs)
	if err != nil {
		return
	}
	for _, e := range ents {
		admin := filepath.Join(r.regs, e.Name())
		if owned[admin] {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			r.add(grove.Finding{Kind: grove.FindingStaleRegistration, Path: admin, Detail: "a symlink among git's worktree registrations (git never makes one)"},
				func() error { return r.w.removeAdmin(admin) })
			continue
		}
		if _, err := os.Lstat(filepath.Join(admin, "locked")); err == nil {
			continue
		}
		data, err := regfile.Read(filepath.Join(admin, "gitdir"), registry.MaxSmallFile)
		if err != nil {
			continue
		}
		dir := filepath.Dir(gitfmt.GitLine(data))
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		r.add(grove.Finding{Kind: grove.FindingStaleRegistration, Path: admin,
			Detail: fmt.Sprintf("git registers a worktree at %s, which is gone", dir)}, func() error {
			rl, err := r.w.lockRepo(r.ctx, "reconcile")
			if err != nil {
				return err
			}
			defer rl.Unlock()
			return r.w.removeAdmin(admin)
		})
	}
}

// strays reports directories in the heads directory that look like
// worktrees of this repository (their .git file names one of its
// registrations) but are no head's and are not registered.
func (r *reconciler) strays(all []*registry.Manifest) {
	known := map[string]bool{}
	for _, mf := range all {
		if mf.State != grove.StateDestroyed || mf.Destroying {
			known[mf.Dir] = true
		}
	}
	ents, err := os.ReadDir(r.w.headsDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		dir := filepath.Join(r.w.headsDir, e.Name())
		if !e.IsDir() || e.Name() == registry.TrashName || known[dir] {
			continue
		}
		admin, err := gitfmt.ReadGitFile(dir)
		if err != nil || filepath.Dir(admin) != r.regs {
			continue
		}
		if data, err := regfile.Read(filepath.Join(admin, "gitdir"), registry.MaxSmallFile); err == nil && filepath.Dir(gitfmt.GitLine(data)) == dir {
			continue // a worktree someone registered by hand: not grove's to judge
		}
		r.add(grove.Finding{Kind: grove.FindingStrayDirectory, Path: dir,
			Detail: "a worktree directory of this repository that no head owns and git does not register"}, nil)
	}
}

// reregister registers head mf's existing directory with git again,
// leaving its files alone: a registration is made beside it with git
// worktree add --no-checkout on the head's branch, then pointed at the
// directory (its gitdir file, and the directory's .git file), and the
// head's index is read from its branch, so that its files compare with
// its last checkpoint. Callers hold the head and repository locks.
func (w *workspace) reregister(ctx context.Context, mf *registry.Manifest) error {
	tmp, err := os.MkdirTemp(filepath.Dir(mf.Dir), ".grove-register-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	addCtx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, err := w.repo.Git(addCtx, "worktree", "add", "--no-checkout", "-q", tmp, mf.Branch); err != nil {
		return err
	}
	admin, err := gitfmt.ReadGitFile(tmp)
	if err != nil {
		return err
	}
	if err := registry.WriteFileAtomic(filepath.Join(admin, headIDFile), []byte(string(mf.ID)+"\n")); err != nil {
		return err
	}
	if err := w.relink(mf, admin); err != nil {
		return err
	}
	c := gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir}
	c.Args = []string{"read-tree", "HEAD"}
	if _, err = w.repo.Run(ctx, c); err != nil {
		return err
	}
	_, err = markSparse(ctx, w.runAs(c), *mf, filepath.Join(mf.Admin, "index"), nil, false)
	return err
}

// relink points head mf's directory and the registration admin at each
// other (what git worktree repair does, done here so that nothing in the
// head's directory decides it) and records admin in the manifest.
// Callers hold the head and repository locks.
func (w *workspace) relink(mf *registry.Manifest, admin string) error {
	if filepath.Dir(admin) != filepath.Join(w.repo.Common, "worktrees") {
		return fmt.Errorf("%s is not one of this repository's registrations", admin)
	}
	if fi, err := os.Lstat(mf.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", mf.Dir)
	}
	dotgit := filepath.Join(mf.Dir, ".git")
	if fi, err := os.Lstat(dotgit); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file; left in place", dotgit)
	}
	if err := registry.WriteFileAtomic(filepath.Join(admin, "gitdir"), []byte(dotgit+"\n")); err != nil {
		return err
	}
	if err := registry.WriteFileAtomic(dotgit, []byte("gitdir: "+admin+"\n")); err != nil {
		return err
	}
	mf.Admin = admin
	return w.meta.WriteManifest(mf)
}

// watches reports what each head's watch saw change (FindingTampered),
// one finding per change; fixing puts all of a head's back at once, and
// forgets a baseline whose watch ended. A watch that saw nothing is left
// alone.
func (r *reconciler) watches(all []*registry.Manifest) {
	names := map[grove.HeadID]string{}
	for _, mf := range all {
		names[mf.ID] = mf.Name
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(r.w.meta.WatchFile("x")), "*.json"))
	for _, p := range files {
		id := grove.HeadID(strings.TrimSuffix(filepath.Base(p), ".json"))
		rec, err := seal.ReadRecord(r.w.meta, id)
		if err != nil {
			continue
		}
		changes, err := r.w.tampered(r.ctx, id)
		if err != nil {
			r.add(grove.Finding{Kind: grove.FindingTampered, Head: names[id], HeadID: id, Path: p,
				Detail: fmt.Sprintf("head %q's watch cannot tell what changed: %v", names[id], err)}, nil)
			continue
		}
		if len(changes) == 0 {
			continue
		}
		var once sync.Once
		var ferr error
		revert := func() error {
			once.Do(func() {
				if ferr = r.w.revertWatched(r.ctx, rec); ferr == nil && rec.Ended {
					ferr = os.Remove(p) // the watch ended: nothing is left to watch
				}
			})
			return ferr
		}
		for _, c := range changes {
			r.add(grove.Finding{Kind: grove.FindingTampered, Head: names[id], HeadID: id, Path: c.Kind + " " + c.Name,
				Detail: fmt.Sprintf("changed while head %q was watched: was %q, now %q", names[id], c.Was, c.Now)}, revert)
		}
	}
}
