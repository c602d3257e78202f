package gitbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// recreate rebuilds head mf, whose directory is gone, at that directory:
// registered again on its branch (git worktree add --no-checkout under the
// repository lock), its files checked out from the branch and prepared as
// a new head's are (prepare), under the head's lock. The manifest says
// Rebuilding meanwhile, so that a head whose rebuild was interrupted is
// never opened half-made: it stays missing until a Recreate finishes it.
// A failure removes what the rebuild made and leaves the head missing,
// as it was.
func (w *workspace) recreate(ctx context.Context, op string, id grove.HeadID) error {
	hl, err := lock.Acquire(ctx, w.meta.HeadLock(id), "recreate")
	if err != nil {
		return err
	}
	defer hl.Unlock()
	mf, err := w.meta.ReadManifest(id)
	if err != nil {
		return &grove.Error{Code: grove.Internal, Op: op, Head: string(id), Err: err}
	}
	fail := func(code grove.Code, err error) error {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return &grove.Error{Code: code, Op: op, Head: mf.Name, Path: mf.Dir, Err: fmt.Errorf("recreate: %w", err)}
	}
	if !mf.Live() || mf.Attached || mf.Branch == "" {
		return fail(grove.FailedPrecondition, errors.New("only a live head grove made can be recreated"))
	}
	if !w.vouchedDir(mf) {
		return fail(grove.FailedPrecondition, fmt.Errorf("%s lies outside the heads directory %s: reopen the head through its binding, which records its directory, with Recreate", mf.Dir, w.headsDir))
	}
	regs := filepath.Join(w.repo.Common, "worktrees")
	if filepath.Dir(mf.Admin) != regs {
		return fail(grove.FailedPrecondition, fmt.Errorf("the head's recorded git dir %s is not one of %s", mf.Admin, regs))
	}
	if c, ok := w.repo.Ref("refs/heads/" + mf.Branch); ok {
		if err := w.ensureTrees(ctx, "recreate", mf.Sparse, [2]string{c, ""}); err != nil {
			return err
		}
	}
	rl, err := w.lockRepo(ctx, "recreate "+mf.Name)
	if err != nil {
		return err
	}
	undo := func() {
		_ = w.removeCreated(context.WithoutCancel(ctx), mf.Dir)
		if mf.Admin != "" {
			_ = w.removeHeadAdmin(mf.Admin, mf)
		}
	}
	if mf.Rebuilding {
		// What an interrupted rebuild left, removed only on evidence that
		// it holds nothing else.
		err := w.leftover(ctx, mf)
		if err == nil {
			err = w.removeCreated(ctx, mf.Dir)
		}
		if err != nil {
			_ = rl.Unlock()
			return fail(grove.FailedPrecondition, fmt.Errorf("what an interrupted rebuild left is not removed: %w", err))
		}
	} else if _, err := os.Lstat(mf.Dir); err == nil {
		_ = rl.Unlock()
		return fail(grove.FailedPrecondition, fmt.Errorf("%s exists: only a head whose directory is gone is recreated", mf.Dir))
	}
	old := mf.Admin
	if err := w.removeHeadAdmin(old, mf); err != nil {
		_ = rl.Unlock()
		return fail(grove.Internal, err)
	}
	mf.Rebuilding = true
	if err := w.meta.WriteManifest(mf); err != nil {
		_ = rl.Unlock()
		return fail(grove.Internal, err)
	}
	err = func() error {
		if err := os.MkdirAll(filepath.Dir(mf.Dir), 0o755); err != nil {
			return err
		}
		if err := grove.ContextError(ctx, op); err != nil {
			return err
		}
		addCtx, cancel := cleanupContext(ctx)
		defer cancel()
		if _, err := w.repo.Git(addCtx, "worktree", "add", "--no-checkout", "-q", mf.Dir, mf.Branch); err != nil {
			return err
		}
		admin, err := gitfmt.ReadGitFile(mf.Dir)
		if err != nil {
			return err
		}
		if admin == old {
			// git named the registration as before: a copy of the head
			// moved away with mv still names it, and would share the
			// rebuilt head's index and HEAD. It gets a name of its own.
			fresh := old + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			if err := os.Rename(admin, fresh); err != nil {
				return err
			}
			if err := w.relink(mf, fresh); err != nil {
				return err
			}
			admin = fresh
		}
		mf.Admin = admin
		if err := registry.WriteFileAtomic(filepath.Join(admin, headIDFile), []byte(string(mf.ID)+"\n")); err != nil {
			return err
		}
		return w.meta.WriteManifest(mf)
	}()
	if err != nil {
		undo()
		_ = rl.Unlock()
		return fail(grove.Internal, err)
	}
	_ = rl.Unlock()
	w.b.crashPoint("recreate:registered")
	if mf.Sparse != nil {
		if c, ok := w.repo.Ref("refs/heads/" + mf.Branch); ok {
			err = w.checkoutSparse(ctx, mf, filepath.Join(mf.Admin, "index"), c)
		} else {
			err = fmt.Errorf("the head's branch %s is gone", mf.Branch)
		}
	} else {
		_, err = w.repo.Run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir,
			Args: []string{"read-tree", "--reset", "-u", "HEAD"}, Parallel: w.repo.ManyFiles(filepath.Join(mf.Admin, "index"))})
	}
	if err == nil {
		err = w.checkoutLFS(ctx, mf, filepath.Join(mf.Admin, "index"))
	}
	if err == nil {
		err = w.checkoutModules(ctx, mf, filepath.Join(mf.Admin, "index"), true)
	}
	if err != nil {
		undo()
		if grove.CodeOf(err) == grove.NotFound || grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return fail(grove.Internal, err)
	}
	if err := w.prepare(ctx, op, mf); err != nil {
		undo()
		return err
	}
	mf.Rebuilding = false
	if c, ok := w.repo.Ref("refs/heads/" + mf.Branch); ok && mf.Sparse != nil {
		mf.SparseBase = grove.CheckpointID(c) // what the rebuild checked out
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		undo()
		return fail(grove.Internal, err)
	}
	return nil
}

// removeHeadAdmin removes the registration admin of head mf only when
// it is that head's: its own head-ID file names the head, or (a
// registration git made before grove stamped it) it registers the head's
// directory. The manifest naming admin is the agent's to write, and another
// worktree's registration — a user's — may have that name.
func (w *workspace) removeHeadAdmin(admin string, mf *registry.Manifest) error {
	if got, err := regfile.Read(filepath.Join(admin, headIDFile), registry.MaxSmallFile); err == nil {
		if strings.TrimSpace(string(got)) != string(mf.ID) {
			return nil
		}
	} else if gd, err := regfile.Read(filepath.Join(admin, "gitdir"), registry.MaxSmallFile); err == nil &&
		filepath.Clean(gitfmt.GitLine(gd)) != filepath.Join(mf.Dir, ".git") {
		return nil
	}
	return w.removeAdmin(admin)
}

// vouchedDir reports whether grove may make or write files at head mf's
// directory on the word of its manifest. A manifest lies in the common
// git dir, which an agent can write (it runs git config): a directory it
// names is trusted only inside the heads directory (the caller's
// OpenOptions.HeadsDir or the default one) — or, for a workspace Reopen
// made, the directory of the caller's binding, which Reopen compares with
// the manifest and makes the heads directory.
//
// The head's directory must be a child of that directory, named without
// a symlink anywhere on the way (a head is never nested in another, and an
// agent can put a symlink in its own head, which lies in the heads
// directory).
func (w *workspace) vouchedDir(mf *registry.Manifest) bool {
	parent := filepath.Dir(mf.Dir)
	if canon, err := canon.Path(parent); err != nil || canon != parent {
		return false
	}
	if fi, err := os.Lstat(mf.Dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return false
	}
	if parent == w.headsDir {
		return true
	}
	def, err := canon.Path(w.repo.DefaultHeadsDir())
	return err == nil && parent == def
}

// leftover reports (nil) whether the directory of head mf, known only from
// its manifest, may be removed as what an interrupted create or rebuild
// made: it lies in the heads directory (vouchedDir), no other head claims
// it, and it is absent, empty, or a worktree of this repository whose
// files all match its commit (compared through a temporary index read
// from that commit: a file of anyone's, an untracked file a setup made,
// make it not a leftover; a file cut short by a killed checkout, whose
// content is the start of its commit's, does not). Ignored files do not
// count: no checkpoint would hold them.
func (w *workspace) leftover(ctx context.Context, mf *registry.Manifest) error {
	if !w.vouchedDir(mf) {
		return fmt.Errorf("%s lies outside the heads directory", mf.Dir)
	}
	all, err := w.meta.Manifests()
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.ID != mf.ID && o.State != grove.StateDestroyed && (canon.WithinCanonical(o.Dir, mf.Dir) || canon.WithinCanonical(mf.Dir, o.Dir)) {
			return fmt.Errorf("head %q claims %s", o.Name, o.Dir)
		}
	}
	ents, err := os.ReadDir(mf.Dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) == 1 && ents[0].Name() == ".git" && ents[0].Type().IsRegular() {
		return nil // killed inside git worktree add, before any file
	}
	admin, err := gitfmt.ReadGitFile(mf.Dir)
	if err != nil || filepath.Dir(admin) != filepath.Join(w.repo.Common, "worktrees") {
		return fmt.Errorf("%s is not a worktree of this repository", mf.Dir)
	}
	if _, err := os.Stat(filepath.Join(admin, "HEAD")); err != nil {
		return fmt.Errorf("%s holds files and no registration", mf.Dir)
	}
	tmp, err := os.MkdirTemp("", "grove-leftover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c := gitcmd.Cmd{GitDir: admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir,
		Env: []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}}
	c.Args = []string{"read-tree", "HEAD"}
	if _, err := w.repo.Run(ctx, c); err != nil {
		return err
	}
	if _, err := markSparse(ctx, w.runAs(c), *mf, filepath.Join(tmp, "index"), nil, false); err != nil {
		return err
	}
	// git never looks into a submodule's directory (it would run git
	// status there, with that repository's configuration): grove does.
	c.Args = []string{"status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=all"}
	out, err := w.repo.Run(ctx, c)
	if err != nil {
		return err
	}
	if marks, err := w.repo.Index.ReadMarks(filepath.Join(tmp, "index")); err == nil {
		for _, p := range marks.Gitlinks {
			if ents, err := regfile.ReadDir(filepath.Join(mf.Dir, filepath.FromSlash(p))); err == nil && len(ents) > 0 {
				return fmt.Errorf("%s holds files in %q, which its commit records as a submodule", mf.Dir, p)
			}
		}
	}
	var partial []string
	for _, rec := range strings.Split(out, "\x00") {
		switch {
		case len(rec) < 2 || rec[:2] == " D":
		case rec[:3] == " M " && len(partial) < maxPartialWrites:
			partial = append(partial, rec[3:])
		default:
			return fmt.Errorf("%s holds %q, which its commit does not", mf.Dir, rec)
		}
	}
	// A checkout killed while it wrote a file leaves the file cut short:
	// what it holds is the start of its commit's content, nothing more.
	for _, p := range partial {
		want, err := w.repo.Runner.Run(ctx, gitcmd.Cmd{GitDir: admin, CommonDir: w.repo.Common, Dir: w.repo.Common, Args: []string{"cat-file", "blob", "HEAD:" + p}})
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(mf.Dir, filepath.FromSlash(p)), os.O_RDONLY|regfile.ONonBlock|regfile.ONoFollow, 0)
		if err != nil {
			return fmt.Errorf("%s holds %s, which cannot be read: %v", mf.Dir, p, err)
		}
		have, err := io.ReadAll(io.LimitReader(f, int64(len(want))+1))
		f.Close()
		if err != nil || !bytes.HasPrefix(want, have) {
			return fmt.Errorf("%s holds %s, which is not its commit's", mf.Dir, p)
		}
	}
	return nil
}

// maxPartialWrites bounds the files an interrupted checkout may have left
// cut short (git writes them one by one, or one per checkout worker).
const maxPartialWrites = 16
