package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/lock"
)

// recreate rebuilds head mf, whose directory is gone, at that directory:
// registered again on its branch (git worktree add --no-checkout under the
// repository lock), its files checked out from the branch and prepared as
// a new head's are (prepare), under the head's lock. The manifest says
// Rebuilding meanwhile, so that a head whose rebuild was interrupted is
// never opened half-made: it stays missing until a Recreate finishes it.
// A failure removes what the rebuild made and leaves the head missing,
// as it was.
func (w *workspace) recreate(ctx context.Context, op string, id backend.HeadID) error {
	hl, err := lock.Acquire(ctx, w.meta.headLock(id), "recreate")
	if err != nil {
		return err
	}
	defer hl.Unlock()
	mf, err := w.meta.readManifest(id)
	if err != nil {
		return &backend.Error{Code: backend.Internal, Op: op, Head: string(id), Err: err}
	}
	fail := func(code backend.Code, err error) error {
		if backend.CodeOf(err) == backend.Canceled {
			return err
		}
		return &backend.Error{Code: code, Op: op, Head: mf.Name, Path: mf.Dir, Err: fmt.Errorf("recreate: %w", err)}
	}
	if !mf.live() || mf.Attached || mf.Branch == "" {
		return fail(backend.FailedPrecondition, errors.New("only a live head grove made can be recreated"))
	}
	if !w.vouchedDir(mf) {
		return fail(backend.FailedPrecondition, fmt.Errorf("%s lies outside the heads directory %s: reopen the head through its binding, which records its directory, with Recreate", mf.Dir, w.headsDir))
	}
	regs := filepath.Join(w.repo.common, "worktrees")
	if filepath.Dir(mf.Admin) != regs {
		return fail(backend.FailedPrecondition, fmt.Errorf("the head's recorded git dir %s is not one of %s", mf.Admin, regs))
	}
	rl, err := w.lockRepo(ctx, "recreate "+mf.Name)
	if err != nil {
		return err
	}
	undo := func() {
		_ = w.removeCreated(context.WithoutCancel(ctx), mf.Dir)
		if mf.Admin != "" {
			_ = w.removeAdmin(mf.Admin)
		}
	}
	if mf.Rebuilding {
		// What an interrupted rebuild left (only a worktree of this
		// repository, or nothing, is removed).
		if err := w.removeCreated(ctx, mf.Dir); err != nil {
			_ = rl.Unlock()
			return fail(backend.FailedPrecondition, err)
		}
	} else if _, err := os.Lstat(mf.Dir); err == nil {
		_ = rl.Unlock()
		return fail(backend.FailedPrecondition, fmt.Errorf("%s exists: only a head whose directory is gone is recreated", mf.Dir))
	}
	if err := w.removeAdmin(mf.Admin); err != nil {
		_ = rl.Unlock()
		return fail(backend.Internal, err)
	}
	mf.Rebuilding = true
	if err := w.meta.writeManifest(mf); err != nil {
		_ = rl.Unlock()
		return fail(backend.Internal, err)
	}
	err = func() error {
		if err := os.MkdirAll(filepath.Dir(mf.Dir), 0o755); err != nil {
			return err
		}
		if err := backend.ContextError(ctx, op); err != nil {
			return err
		}
		addCtx, cancel := cleanupContext(ctx)
		defer cancel()
		if _, err := w.repo.git(addCtx, "worktree", "add", "--no-checkout", "-q", mf.Dir, mf.Branch); err != nil {
			return err
		}
		admin, err := readGitFile(mf.Dir)
		if err != nil {
			return err
		}
		mf.Admin = admin
		if err := writeFileAtomic(filepath.Join(admin, headIDFile), []byte(string(mf.ID)+"\n")); err != nil {
			return err
		}
		return w.meta.writeManifest(mf)
	}()
	if err != nil {
		undo()
		_ = rl.Unlock()
		return fail(backend.Internal, err)
	}
	_ = rl.Unlock()
	crashPoint("recreate:registered")
	if _, err := w.repo.run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.common, WorkTree: mf.Dir, Dir: mf.Dir,
		Args: []string{"read-tree", "--reset", "-u", "HEAD"}}); err != nil {
		undo()
		return fail(backend.Internal, err)
	}
	if err := w.prepare(ctx, op, mf); err != nil {
		undo()
		return err
	}
	mf.Rebuilding = false
	if err := w.meta.writeManifest(mf); err != nil {
		undo()
		return fail(backend.Internal, err)
	}
	return nil
}

// vouchedDir reports whether grove may make or write files at head mf's
// directory on the word of its manifest. A manifest lies in the common
// git dir, which an agent can write (it runs git config): a directory it
// names is trusted only inside the heads directory (the caller's
// OpenOptions.HeadsDir or the default one) — or, for a workspace Reopen
// made, the directory of the caller's binding, which Reopen compares with
// the manifest and makes the heads directory.
func (w *workspace) vouchedDir(mf *manifest) bool {
	return within(mf.Dir, w.headsDir) || within(mf.Dir, w.repo.defaultHeadsDir())
}
