package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/destdir"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/lifecycle"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/sandbox"
	"github.com/groveworks/grove/internal/transport"
)

// workspace is one open repository.
type workspace struct {
	b        *Backend
	repo     *gitrepo.Repo
	meta     registry.Dir
	id       grove.WorkspaceID
	headsDir string // where new heads go: OpenOptions.HeadsDir, or beside a reopened head
	clone    string // this clone's ID (see meta.cloneID)
	remote   *transport.Remote

	setup, teardown *grove.Hook                                             // OpenOptions' (or ReopenOptions')
	headEnv         func(context.Context, grove.HeadInfo) ([]string, error) // their HeadEnv
	watchChanges    bool                                                    // their WatchChanges: see watched.go
	sandbox         *grove.Sandbox                                          // where they run; nil: the host

	mods moduleCache // see submodule.go

	mu     sync.Mutex
	closed bool
}

var _ backend.Workspace = (*workspace)(nil)

func (w *workspace) enter(ctx context.Context, op string) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return grove.Errorf(grove.FailedPrecondition, "gitbackend: "+op, "workspace is closed")
	}
	_, err := w.b.enter(ctx, op)
	return err
}

func (w *workspace) Info() grove.WorkspaceInfo {
	return grove.WorkspaceInfo{ID: w.id, Backend: BackendID, Locator: w.repo.Common}
}

// lockRepo takes the short per-repository lock.
func (w *workspace) lockRepo(ctx context.Context, purpose string) (*lock.Lock, error) {
	return lock.Acquire(ctx, w.meta.RepoLock(), purpose)
}

// cleanupContext is the context cleanup work runs under: it survives the
// caller's cancellation (cleanup must finish) but is bounded.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
}

// recoverCreates removes what creates killed half-way left behind: a
// manifest still marked creating whose head lock nobody holds. Callers hold
// the repository lock.
func (w *workspace) recoverCreates(ctx context.Context) error {
	return w.recoverInterrupted("recover an interrupted create", func(mf *registry.Manifest) bool { return mf.Creating },
		func(mf *registry.Manifest) error { return w.undo(ctx, mf, true) })
}

// recoverInterrupted runs finish on each head whose manifest interrupted
// reports and whose head lock nobody holds (its operation's process is
// gone), holding that lock, with the manifest read again under it (the
// operation may have ended between the reads). Callers hold the
// repository lock.
func (w *workspace) recoverInterrupted(purpose string, interrupted func(*registry.Manifest) bool, finish func(*registry.Manifest) error) error {
	all, err := w.meta.Manifests()
	if err != nil {
		return grove.Errorf(grove.Internal, "gitbackend: recover", "%w", err)
	}
	for _, mf := range all {
		if !interrupted(mf) {
			continue
		}
		hl, err := lock.TryLock(w.meta.HeadLock(mf.ID), purpose)
		if err != nil {
			continue // its process is alive
		}
		if now, rerr := w.meta.ReadManifest(mf.ID); rerr == nil && interrupted(now) {
			err = finish(now)
		}
		_ = hl.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// undoCreate removes a head's directory, registration, branch and manifest;
// callers hold the repository lock.
func (w *workspace) undoCreate(ctx context.Context, mf *registry.Manifest) error {
	return w.undo(ctx, mf, false)
}

// undo is undoCreate; recovered says the create is known only from its
// manifest (it was interrupted in another process), which an agent can
// write: its directory is then removed only on evidence that it holds
// nothing but what the create made (see leftover), and otherwise left in
// place (Reconcile reports it as a stray directory) with its registration.
func (w *workspace) undo(ctx context.Context, mf *registry.Manifest, recovered bool) error {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	var errs []error
	removeDir := true
	if recovered {
		if err := w.leftover(ctx, mf); err != nil {
			removeDir = false
		}
	}
	if removeDir {
		errs = append(errs, w.dropModules(mf.ID, nil), w.removeCreated(ctx, mf.Dir))
	}
	// A git worktree add killed half-way leaves its registration locked
	// ("initializing"), which prune would keep: remove it directly.
	if admins, err := filepath.Glob(filepath.Join(w.repo.Common, "worktrees", "*", "gitdir")); err == nil && removeDir {
		for _, g := range admins {
			if data, err := regfile.Read(g, registry.MaxSmallFile); err == nil && filepath.Dir(gitfmt.GitLine(data)) == mf.Dir {
				errs = append(errs, os.RemoveAll(filepath.Dir(g)))
			}
		}
	}
	if err := w.prune(ctx); err != nil {
		errs = append(errs, err)
	}
	if mf.Branch != "" && w.repo.RefExists("refs/heads/"+mf.Branch) {
		if _, err := w.repo.Run(ctx, gitcmd.Cmd{Args: []string{"update-ref", "-d", "refs/heads/" + mf.Branch, string(mf.Base)}, Finish: true}); err != nil {
			errs = append(errs, err)
		}
	}
	// Lock files stay: removing one while another process opens it would
	// let two hold it.
	for _, p := range []string{w.meta.ManifestFile(mf.ID), w.meta.OpMarker(mf.ID)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: undo create", Head: mf.Name, Err: err}
	}
	return nil
}

// removeAdmin removes a worktree's registration (its git dir under
// <common>/worktrees), if it is still there and is a real directory
// there: a symlink in its place is removed, never followed.
func (w *workspace) removeAdmin(admin string) error {
	if filepath.Dir(admin) != filepath.Join(w.repo.Common, "worktrees") {
		return nil // not a registration grove can vouch for
	}
	fi, err := os.Lstat(admin)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.IsDir():
		return os.Remove(admin)
	}
	return os.RemoveAll(admin)
}

// prune runs git worktree prune, first removing every symlink among the
// registrations: git never makes one, and prune would delete what it
// leads to. Callers hold the repository lock.
func (w *workspace) prune(ctx context.Context) error {
	regs := filepath.Join(w.repo.Common, "worktrees")
	ents, err := os.ReadDir(regs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 {
			_ = os.Remove(filepath.Join(regs, e.Name()))
		}
	}
	_, err = w.repo.Git(ctx, "worktree", "prune")
	return err
}

// removeCreated removes the directory of an undone create. It was empty or
// absent before the create, so it is removed only while it is still empty
// or holds a worktree of this repository (a .git file naming one, or one
// git was killed before writing whole). A git command of a creator that was
// just killed can still be writing into it for a moment (it dies by
// Pdeathsig, asynchronously): removal is retried until the directory stays
// gone, for up to two seconds.
func (w *workspace) removeCreated(ctx context.Context, dir string) error {
	var err error
	for range 40 {
		ents, rerr := os.ReadDir(dir)
		if errors.Is(rerr, fs.ErrNotExist) {
			return nil
		}
		ours := rerr == nil && len(ents) == 0
		if admin, gerr := gitfmt.ReadGitFile(dir); gerr == nil {
			ours = canon.WithinCanonical(admin, filepath.Join(w.repo.Common, "worktrees"))
		} else if data, rerr := regfile.Read(filepath.Join(dir, ".git"), registry.MaxSmallFile); rerr == nil && len(data) == 0 {
			ours = true // git was killed while writing the .git file
		}
		if !ours {
			return fmt.Errorf("%s holds files that are not this create's; left in place", dir)
		}
		if err = os.RemoveAll(dir); err == nil {
			if _, serr := os.Lstat(dir); errors.Is(serr, fs.ErrNotExist) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("removing %s: %v", dir, err)
}

// insideHead returns the live head whose directory holds path, if any.
func (w *workspace) insideHead(path string) (*registry.Manifest, error) {
	all, err := w.meta.Manifests()
	if err != nil {
		return nil, err
	}
	for _, mf := range all {
		if mf.Live() && canon.WithinCanonical(path, mf.Dir) {
			return mf, nil
		}
	}
	return nil, nil
}

// CreateHead makes a linked worktree on a new branch: registered with
// git worktree add --no-checkout under the repository lock, populated under
// the head's own lock.
func (w *workspace) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	const op = "create head"
	if err := w.enter(ctx, "CreateHead"); err != nil {
		return nil, err
	}
	fail := func(code grove.Code, path string, format string, args ...any) error {
		return &grove.Error{Code: code, Op: "gitbackend: " + op, Head: spec.Name, Path: path, Err: fmt.Errorf(format, args...)}
	}
	if spec.Attach != "" {
		return w.attach(ctx, spec)
	}
	if spec.Sparse == nil && spec.SparseFromMain && !w.sealed() {
		set, err := w.repo.MainSparse(ctx)
		if err != nil {
			return nil, err
		}
		copied := *spec
		copied.Sparse, spec = set, &copied
	}
	if spec.Sparse != nil && w.sealed() {
		return nil, fail(grove.Unimplemented, "", "a sparse head under a sandbox: its sealed git dir holds the whole index")
	}
	from := spec.From
	if from == "" {
		from = "HEAD"
	}
	commit, err := w.repo.Resolve(ctx, op, from)
	if err != nil {
		return nil, err
	}
	if err := w.ensureTrees(ctx, op, spec.Sparse, [2]string{commit, ""}); err != nil {
		return nil, err
	}
	// A taken name is the answer before anything about its directory
	// (register checks again under the repository lock).
	if all, err := w.meta.Manifests(); err == nil {
		for _, mf := range all {
			if mf.Name == spec.Name && mf.Live() {
				return nil, fail(grove.AlreadyExists, "", "a head named %q exists", spec.Name)
			}
		}
	}
	dir := spec.Dir
	if dir == "" {
		dir = filepath.Join(w.headsDir, spec.Name)
	}
	if dir, err = canon.Path(dir); err != nil {
		return nil, fail(grove.InvalidArgument, spec.Dir, "%v", err)
	}
	if w.repo.Main != "" && canon.WithinCanonical(dir, w.repo.Main) {
		return nil, fail(grove.InvalidArgument, dir, "a head's directory cannot lie inside the repository's working tree %s", w.repo.Main)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fail(grove.AlreadyExists, dir, "directory %s exists and is not empty", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fail(grove.FailedPrecondition, dir, "%v", err)
	}

	var mf *registry.Manifest
	var hl, bl *lock.Lock
	var recorded func() error
	for attempt := 0; ; attempt++ {
		rl, err := w.lockRepo(ctx, "create head "+spec.Name)
		if err != nil {
			return nil, err
		}
		mf, hl, bl, recorded, err = w.register(ctx, spec, commit, dir)
		_ = rl.Unlock()
		if errors.Is(err, errPruneRace) && attempt < 3 {
			continue // undone: register again
		}
		if err != nil {
			return nil, err
		}
		break
	}
	w.b.crashPoint("create:registered")
	// Populate the files under the head's own lock only.
	err = w.populate(ctx, mf, recorded)
	_ = recorded() // the writes register left running end before an undo
	if err != nil {
		if rl, lerr := w.lockRepo(context.WithoutCancel(ctx), "undo create "+spec.Name); lerr == nil {
			_ = w.undoCreate(ctx, mf)
			_ = rl.Unlock()
		}
		_ = hl.Unlock()
		if bl != nil {
			_ = bl.Unlock()
		}
		return nil, err
	}
	_ = hl.Unlock()
	w.schedulePush(*mf) // a new head travels from its first commit on
	return w.newHead(mf, bl)
}

// register records and registers a new head under the repository lock. It
// returns the head's manifest and its held head lock and, for an isolated
// head, its isolation lock; and recorded, which waits for the head's ID
// file and the manifest naming its git dir, written while the caller goes
// on (each write is synced to disk, a few milliseconds on ext4, which the
// checkout hides). recorded is called before the manifest is written again, and
// before an undo.
//
// Until they are written, the head is in the state a crash inside git
// worktree add leaves, which recovery undoes the same way (see leftover).
func (w *workspace) register(ctx context.Context, spec *backend.HeadSpec, commit, dir string) (*registry.Manifest, *lock.Lock, *lock.Lock, func() error, error) {
	const op = "gitbackend: create head"
	fail := func(code grove.Code, path string, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: spec.Name, Path: path, Err: fmt.Errorf(format, args...)}
	}
	if err := w.recoverCreates(ctx); err != nil {
		return nil, nil, nil, nil, err
	}
	all, err := w.meta.Manifests()
	if err != nil {
		return nil, nil, nil, nil, fail(grove.Internal, "", "%v", err)
	}
	for _, mf := range all {
		switch {
		case mf.Name == spec.Name && mf.Live():
			return nil, nil, nil, nil, fail(grove.AlreadyExists, "", "a head named %q exists", spec.Name)
		case mf.Live() && (canon.WithinCanonical(dir, mf.Dir) || canon.WithinCanonical(mf.Dir, dir)):
			return nil, nil, nil, nil, fail(grove.InvalidArgument, dir, "directory %s overlaps head %q at %s", dir, mf.Name, mf.Dir)
		}
	}
	if seeds := filepath.Join(w.headsDir, seedsName); canon.WithinCanonical(dir, seeds) || canon.WithinCanonical(seeds, dir) {
		return nil, nil, nil, nil, fail(grove.InvalidArgument, dir, "directory %s overlaps grove's seeds at %s", dir, seeds)
	}
	branch := spec.Branch
	if branch == "" {
		branch = "grove/" + spec.Name
		for n := 2; w.repo.RefExists("refs/heads/" + branch); n++ {
			branch = "grove/" + spec.Name + "-" + strconv.Itoa(n)
		}
	} else if w.repo.RefExists("refs/heads/" + branch) {
		return nil, nil, nil, nil, fail(grove.AlreadyExists, branch, "branch %q exists", branch)
	}
	if err := w.repo.CheckBranchName(ctx, branch); err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return nil, nil, nil, nil, err
		}
		return nil, nil, nil, nil, fail(grove.InvalidArgument, branch, "%q is not a valid branch name", branch)
	}
	mf := &registry.Manifest{
		ID: grove.HeadID(uuid.NewString()), Name: spec.Name, Access: spec.Access, Branch: branch,
		Dir: dir, Base: grove.CheckpointID(commit), State: grove.StateActive, Creating: true,
		Created: time.Now().UTC(), Clone: w.clone, Sparse: spec.Sparse, NoSubmodules: spec.NoSubmodules,
	}
	if spec.Sparse != nil {
		mf.SparseBase = grove.CheckpointID(commit)
	}
	hl, err := lock.TryLock(w.meta.HeadLock(mf.ID), "create")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var bl *lock.Lock
	if spec.Access == grove.Isolated {
		if bl, err = lock.TryLock(w.meta.BindLock(mf.ID), "isolated head "+spec.Name); err != nil {
			_ = hl.Unlock()
			return nil, nil, nil, nil, err
		}
	}
	undo := func(err error) (*registry.Manifest, *lock.Lock, *lock.Lock, func() error, error) {
		_ = w.undoCreate(ctx, mf)
		_ = hl.Unlock()
		if bl != nil {
			_ = bl.Unlock()
		}
		return nil, nil, nil, nil, err
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		return undo(fail(grove.Internal, "", "writing the manifest: %v", err))
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return undo(fail(grove.Internal, dir, "%v", err))
	}
	// git worktree add is not interrupted: a git killed inside it leaves
	// the new branch's ref lock behind, which would hold the name. It
	// writes no file of the head (--no-checkout), so it is short.
	if err := grove.ContextError(ctx, op); err != nil {
		return undo(err)
	}
	addCtx, cancel := cleanupContext(ctx)
	_, err = w.repo.Git(addCtx, "worktree", "add", "--no-checkout", "-q", "-b", branch, dir, commit)
	cancel()
	if err != nil {
		switch {
		case grove.CodeOf(err) == grove.Canceled:
		case pruneRace.MatchString(gitcmd.Stderr(err)):
			err = &grove.Error{Code: grove.Busy, Op: op, Head: spec.Name, Path: dir, Err: fmt.Errorf(
				"a git worktree prune beside git worktree add took its registration; try again: %w", errPruneRace)}
		default:
			err = fail(grove.Internal, dir, "git worktree add: %v", err)
		}
		return undo(err)
	}
	admin, err := gitfmt.ReadGitFile(dir)
	if err != nil {
		return undo(fail(grove.Internal, dir, "%v", err))
	}
	mf.Admin = admin
	m := *mf
	done := make(chan error, 1)
	go func() {
		err := registry.WriteFileAtomic(filepath.Join(m.Admin, headIDFile), []byte(string(m.ID)+"\n"))
		if err == nil {
			err = w.meta.WriteManifest(&m)
		}
		done <- err
	}()
	return mf, hl, bl, sync.OnceValue(func() error { return <-done }), nil
}

// pruneRace is what git worktree add says when a git worktree prune run
// beside it removed the registration it was writing (prune takes a
// registration without its gitdir file for a stale one).
var pruneRace = regexp.MustCompile(`could not open '.*/worktrees/[^/]*/[^/']*' for writing|unable to create '.*/worktrees/[^/]*/`)

// errPruneRace marks a create undone because of such a race.
var errPruneRace = errors.New("git worktree prune raced git worktree add")

// headIDFile, in a worktree's git dir, carries the head ID, so that reopen
// can tell the worktree is the head the binding names.
const headIDFile = "grove-head-id"

// populate checks the head's files out — copying first what another head
// has of them (see copyFromDisk) — and prepares them (see prepare), once
// recorded (see register) says the head's ID file and manifest are
// written; callers hold its head lock.
func (w *workspace) populate(ctx context.Context, mf *registry.Manifest, recorded func() error) error {
	var all bool
	var err error
	if mf.Sparse == nil { // a sparse head checks out its set: a copy would bring the whole tree
		if all, err = w.fromSeed(ctx, mf); err == nil && !all {
			all, err = w.copyFromDisk(ctx, mf)
		}
		if err != nil {
			return err
		}
	}
	if all {
		if f := w.b.seams.afterDiskCopy; f != nil {
			f(mf.Dir)
		}
		// git checks what was copied: with every file's stat data in the
		// index, diff-files exits 0 only if each file is its entry's.
		_, err = w.repo.Run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir, Args: []string{"diff-files", "--quiet"}})
	}
	switch {
	case mf.Sparse != nil:
		err = w.checkoutSparse(ctx, mf, filepath.Join(mf.Admin, "index"), string(mf.Base))
	case !all || err != nil:
		_, err = w.repo.Run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir, Args: []string{"read-tree", "--reset", "-u", "HEAD"},
			Parallel: w.repo.ManyFiles(filepath.Join(mf.Admin, "index"))})
	}
	if err == nil {
		err = w.checkoutLFS(ctx, mf, filepath.Join(mf.Admin, "index"))
	}
	if err == nil {
		err = w.checkoutModules(ctx, mf, filepath.Join(mf.Admin, "index"), true)
	}
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled || grove.CodeOf(err) == grove.NotFound {
			return err
		}
		if cerr := grove.ContextError(ctx, "gitbackend: create head"); cerr != nil {
			return cerr
		}
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: create head", Head: mf.Name, Path: mf.Dir, Err: err}
	}
	if err := recorded(); err != nil {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: create head", Head: mf.Name, Path: mf.Dir, Err: fmt.Errorf("recording the head: %w", err)}
	}
	if err := w.prepare(ctx, "gitbackend: create head", mf); err != nil {
		return err
	}
	mf.Creating = false
	if err := w.meta.WriteManifest(mf); err != nil {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: create head", Head: mf.Name, Err: err}
	}
	return nil
}

// prepare gives a head whose files are in place what the workspace
// configured: copies of what .worktreeinclude names, then the Setup hook.
func (w *workspace) prepare(ctx context.Context, op string, mf *registry.Manifest) error {
	if err := lifecycle.CopyIncludes(ctx, w.repo, mf); err != nil {
		if grove.CodeOf(err) == grove.Canceled || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return grove.ContextError(ctx, op)
		}
		return &grove.Error{Code: grove.Internal, Op: op, Head: mf.Name, Path: mf.Dir, Err: fmt.Errorf("copying what %s names: %w", headcopy.IncludeFile, err)}
	}
	w.b.crashPoint("create:setup")
	return w.runHook(ctx, op, grove.HookSetup, w.setup, mf)
}

// sealed reports whether commands on head content run under a sandbox,
// each head's git dir sealed (see seal.go).
func (w *workspace) sealed() bool { return w.sandbox != nil && w.sandbox.Kind != grove.SandboxNone }

// runHook runs h (when set) in the head's directory, where the
// workspace's sandbox says (under one, through the head's private git
// dir, as an agent's commands run): see sandbox.RunHook.
func (w *workspace) runHook(ctx context.Context, op, kind string, h *grove.Hook, mf *registry.Manifest) error {
	if h == nil {
		return nil
	}
	repo := w.repo.Main
	if repo == "" {
		repo = w.repo.Common
	}
	c := sandbox.Command{Dir: mf.Dir,
		Env: []string{"GROVE_HEAD=" + mf.Name, "GROVE_HEAD_ID=" + string(mf.ID), "GROVE_HEAD_DIR=" + mf.Dir, "GROVE_REPO=" + repo}}
	if w.headEnv != nil {
		vars, err := w.headEnv(ctx, grove.HeadInfo{ID: mf.ID, Name: mf.Name, Root: mf.Dir, Access: mf.Access, Branch: mf.Branch, Base: mf.Base, State: mf.State})
		if err != nil {
			return &grove.Error{Code: grove.CodeOf(err), Op: op, Head: mf.Name, Err: fmt.Errorf("the %s hook's variables: %w", kind, err)}
		}
		c.Env = append(c.Env, vars...)
	}
	if w.sealed() {
		if err := w.sealSync(ctx, *mf); err != nil {
			return err
		}
		view, err := w.sealView(*mf)
		if err != nil {
			return err
		}
		c.Dir, c.Mounts = view.Dir, view.Mounts
	}
	return sandbox.RunHook(ctx, w.sandbox, op, mf.Name, kind, h, c)
}

// resolveFrom returns p, made absolute relative to dir.
func resolveFrom(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// attach makes a shared head over an existing checkout of this repository.
func (w *workspace) attach(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	const op = "gitbackend: attach"
	fail := func(code grove.Code, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: spec.Name, Path: spec.Attach, Err: fmt.Errorf(format, args...)}
	}
	abs, err := filepath.Abs(spec.Attach)
	if err != nil {
		return nil, fail(grove.InvalidArgument, "%v", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, fail(grove.NotFound, "no directory at %s", abs)
	}
	out, err := w.repo.Run(ctx, gitcmd.Cmd{Dir: abs, Discover: true, Args: []string{"rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel", "--git-dir"}})
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return nil, err
		}
		return nil, fail(grove.InvalidArgument, "%s is not a git checkout: %v", abs, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 3 {
		return nil, fail(grove.InvalidArgument, "%s is not a checkout with a working tree", abs)
	}
	common, _ := filepath.EvalSymlinks(lines[0])
	if common != w.repo.Common {
		return nil, fail(grove.InvalidArgument, "%s is a checkout of %s, not of this workspace's %s", abs, common, w.repo.Common)
	}
	dir, _ := filepath.EvalSymlinks(lines[1])
	admin, _ := filepath.EvalSymlinks(lines[2])
	head, err := w.repo.Run(ctx, gitcmd.Cmd{GitDir: admin, CommonDir: common, WorkTree: dir, Dir: dir, Args: []string{"rev-parse", "--verify", "-q", "HEAD^{commit}"}})
	if err != nil {
		return nil, fail(grove.FailedPrecondition, "the checkout has no commit yet")
	}
	branch, err := w.repo.Run(ctx, gitcmd.Cmd{GitDir: admin, CommonDir: common, WorkTree: dir, Dir: dir, Args: []string{"symbolic-ref", "-q", "--short", "HEAD"}})
	if err != nil {
		branch = "" // detached
	}
	rl, err := w.lockRepo(ctx, "attach "+spec.Name)
	if err != nil {
		return nil, err
	}
	defer rl.Unlock()
	all, err := w.meta.Manifests()
	if err != nil {
		return nil, fail(grove.Internal, "%v", err)
	}
	for _, mf := range all {
		switch {
		case mf.Name == spec.Name && mf.Live():
			return nil, fail(grove.AlreadyExists, "a head named %q exists", spec.Name)
		case mf.Live() && !mf.Attached && (canon.WithinCanonical(dir, mf.Dir) || canon.WithinCanonical(mf.Dir, dir)):
			return nil, fail(grove.InvalidArgument, "%s overlaps head %q at %s", dir, mf.Name, mf.Dir)
		}
	}
	mf := &registry.Manifest{
		ID: grove.HeadID(uuid.NewString()), Name: spec.Name, Access: grove.Shared, Attached: true,
		Branch: branch, Dir: dir, Admin: admin, Base: grove.CheckpointID(head), State: grove.StateActive,
		Created: time.Now().UTC(),
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		return nil, fail(grove.Internal, "writing the manifest: %v", err)
	}
	return w.newHead(mf, nil)
}

func (w *workspace) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	const op = "gitbackend: open head"
	if err := w.enter(ctx, "OpenHead"); err != nil {
		return nil, err
	}
	mf, err := w.meta.ByName(name)
	if err != nil {
		return nil, grove.Errorf(grove.Internal, op, "%w", err)
	}
	if mf == nil {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Head: name, Reason: grove.ReasonMissing, Err: fmt.Errorf("no head named %q", name)}
	}
	return w.open(ctx, op, mf, opts)
}

// open verifies a head's directory, registration, identity and branch, and
// binds a handle to it.
func (w *workspace) open(ctx context.Context, op string, mf *registry.Manifest, opts *backend.ReopenOptions) (*head, error) {
	fail := func(code grove.Code, reason grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: op, Head: mf.Name, Reason: reason, Err: fmt.Errorf(format, args...)}
	}
	if mf.Sparse != nil && w.sealed() {
		return nil, fail(grove.Unimplemented, "", "a sparse head under a sandbox: its sealed git dir holds the whole index")
	}
	err := w.verify(mf, fail)
	if err != nil && opts != nil && opts.Recreate && !opts.ReadOnly && !mf.Attached {
		if be := (*grove.Error)(nil); errors.As(err, &be) && be.Reason == grove.ReasonMissing {
			if err := w.recreate(ctx, op, mf.ID); err != nil {
				return nil, err
			}
			if mf, err = w.meta.ReadManifest(mf.ID); err != nil {
				return nil, grove.Errorf(grove.Internal, op, "%w", err)
			}
			err = w.verify(mf, fail)
		}
	}
	if err != nil {
		return nil, err
	}
	observe := opts != nil && opts.ReadOnly
	if mf.State == grove.StateArchived && !observe && (opts == nil || !opts.AllowArchived) {
		return nil, fail(grove.Archived, "", "head %q is archived", mf.Name)
	}
	if observe {
		return w.newHead(mf, nil)
	}
	var bl *lock.Lock
	if mf.Access == grove.Isolated {
		l, err := lock.TryLock(w.meta.BindLock(mf.ID), "isolated head "+mf.Name)
		if grove.CodeOf(err) == grove.Busy {
			return nil, fail(grove.AlreadyBound, "", "isolated head %q is held: %v", mf.Name, err)
		}
		if err != nil {
			return nil, err
		}
		bl = l
	}
	if mf.State == grove.StateArchived {
		if err := w.setState(ctx, mf.ID, false); err != nil {
			if bl != nil {
				_ = bl.Unlock()
			}
			return nil, err
		}
		mf.State = grove.StateActive
	}
	return w.newHead(mf, bl)
}

// verify runs the checks that need no git process: the directory, its
// registration in this repository, the head ID it carries and its branch.
func (w *workspace) verify(mf *registry.Manifest, fail func(grove.Code, grove.Reason, string, ...any) error) error {
	// A manifest is grove's, but it lies where anyone who can write the
	// common git dir can rewrite it: its git dir must be this
	// repository's (a registration, or the repository itself for an
	// attached main checkout), whatever else it says.
	if regs := filepath.Join(w.repo.Common, "worktrees"); filepath.Dir(mf.Admin) != regs && !(mf.Attached && mf.Admin == w.repo.Common) {
		return fail(grove.IdentityMismatch, grove.ReasonUnregistered, "the head's recorded git dir %s is not one of %s", mf.Admin, w.repo.Common)
	}
	if mf.Rebuilding {
		return fail(grove.NotFound, grove.ReasonMissing, "a Recreate of the head at %s did not finish; reopen with Recreate to finish it", mf.Dir)
	}
	if st, err := os.Lstat(mf.Dir); err == nil && !st.IsDir() {
		return fail(grove.NotFound, grove.ReasonUnregistered, "%s is no longer a directory (a symlink or a file took its place)", mf.Dir)
	}
	st, err := os.Stat(mf.Dir)
	if err != nil || !st.IsDir() {
		// git records where the worktree is; if it says elsewhere, the
		// head was moved rather than deleted.
		if data, err := regfile.Read(filepath.Join(mf.Admin, "gitdir"), registry.MaxSmallFile); err == nil && !mf.Attached {
			if at := filepath.Dir(gitfmt.GitLine(data)); at != mf.Dir {
				if _, err := os.Stat(at); err == nil {
					return fail(grove.NotFound, grove.ReasonMoved, "the head's directory moved from %s to %s", mf.Dir, at)
				}
			}
		}
		return fail(grove.NotFound, grove.ReasonMissing, "the head's directory %s is gone", mf.Dir)
	}
	admin, err := gitfmt.ReadGitFile(mf.Dir)
	if err != nil {
		return fail(grove.NotFound, grove.ReasonUnregistered, "%s is not a git worktree: %v", mf.Dir, err)
	}
	if admin != mf.Admin {
		if _, err := os.Stat(admin); err != nil {
			return fail(grove.NotFound, grove.ReasonMoved, "the worktree's git dir %s is gone: the repository moved", admin)
		}
		return fail(grove.NotFound, grove.ReasonUnregistered, "%s belongs to git dir %s, not %s", mf.Dir, admin, mf.Admin)
	}
	if !mf.Attached {
		back, err := regfile.Read(filepath.Join(admin, "gitdir"), registry.MaxSmallFile)
		if err != nil {
			return fail(grove.NotFound, grove.ReasonUnregistered, "the repository no longer registers %s", mf.Dir)
		}
		if recorded := filepath.Dir(gitfmt.GitLine(back)); recorded != mf.Dir {
			return fail(grove.NotFound, grove.ReasonMoved, "the repository records the worktree at %s, not %s", recorded, mf.Dir)
		}
		if common, err := regfile.Read(filepath.Join(admin, "commondir"), registry.MaxSmallFile); err != nil ||
			!sameDir(resolveFrom(admin, gitfmt.GitLine(common)), w.repo.Common) {
			return fail(grove.NotFound, grove.ReasonUnregistered, "the worktree's git dir %s no longer belongs to %s", admin, w.repo.Common)
		}
		// Git reads HEAD before anything: a FIFO there would block it.
		if fi, err := os.Lstat(filepath.Join(admin, "HEAD")); err != nil || !fi.Mode().IsRegular() {
			return fail(grove.NotFound, grove.ReasonUnregistered, "the worktree's git dir %s has no HEAD file", admin)
		}
		id, err := regfile.Read(filepath.Join(admin, headIDFile), registry.MaxSmallFile)
		if err != nil || strings.TrimSpace(string(id)) != string(mf.ID) {
			return fail(grove.IdentityMismatch, grove.ReasonHeadID, "the worktree at %s is not head %s", mf.Dir, mf.ID)
		}
	}
	if mf.Branch != "" && !w.repo.RefExists("refs/heads/"+mf.Branch) {
		return fail(grove.NotFound, grove.ReasonBranch, "branch %q is gone", mf.Branch)
	}
	return nil
}

func (w *workspace) Heads(ctx context.Context) ([]grove.HeadInfo, error) {
	if err := w.enter(ctx, "Heads"); err != nil {
		return nil, err
	}
	all, err := w.meta.Manifests()
	if err != nil {
		return nil, grove.Errorf(grove.Internal, "gitbackend: heads", "%w", err)
	}
	var out []grove.HeadInfo
	for _, mf := range all {
		if mf.Live() {
			out = append(out, mf.Info())
		}
	}
	return out, nil
}

func (w *workspace) SetArchived(ctx context.Context, id grove.HeadID, archived bool) error {
	if err := w.enter(ctx, "SetArchived"); err != nil {
		return err
	}
	return w.setState(ctx, id, archived)
}

// setState archives or unarchives a head's manifest under the repository
// lock.
func (w *workspace) setState(ctx context.Context, id grove.HeadID, archived bool) error {
	const op = "gitbackend: set archived"
	rl, err := w.lockRepo(ctx, "set archived")
	if err != nil {
		return err
	}
	defer rl.Unlock()
	mf, err := w.meta.ReadManifest(id)
	switch {
	case err != nil || mf.Creating:
		return &grove.Error{Code: grove.NotFound, Op: op, Head: string(id), Err: fmt.Errorf("no head %s", id)}
	case mf.State == grove.StateDestroyed:
		return &grove.Error{Code: grove.Destroyed, Op: op, Head: mf.Name, Err: fmt.Errorf("head %q was destroyed", mf.Name)}
	}
	mf.State = grove.StateActive
	if archived {
		mf.State = grove.StateArchived
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		return &grove.Error{Code: grove.Internal, Op: op, Head: mf.Name, Err: err}
	}
	return nil
}

// Materialize checks the tree of at out into dir through a temporary
// index, without registering a worktree.
func (w *workspace) Materialize(ctx context.Context, at grove.Rev, dir string) error {
	const op = "gitbackend: materialize"
	if err := w.enter(ctx, "Materialize"); err != nil {
		return err
	}
	commit, err := w.repo.Resolve(ctx, "materialize", at)
	if err != nil {
		return err
	}
	if err := w.ensureTrees(ctx, "materialize", nil, [2]string{commit, ""}); err != nil {
		return err
	}
	// The path is checked as given and as resolved: a symlink an agent
	// planted in its head must not carry the write out of it.
	given, err := filepath.Abs(dir)
	if err != nil {
		return &grove.Error{Code: grove.InvalidArgument, Op: op, Path: dir, Err: err}
	}
	dir, err = canon.Path(dir)
	if err != nil {
		return &grove.Error{Code: grove.InvalidArgument, Op: op, Path: dir, Err: err}
	}
	for _, p := range []string{given, dir} {
		if mf, err := w.insideHead(p); err != nil || mf != nil {
			return &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: p, Err: fmt.Errorf("%s lies inside a head", p)}
		}
		if w.repo.Main != "" && canon.WithinCanonical(p, w.repo.Main) {
			return &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: p, Err: fmt.Errorf("%s lies inside the repository's working tree", p)}
		}
	}
	undo, err := destdir.Prepare(op, dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "grove-materialize-")
	if err == nil {
		defer os.RemoveAll(tmp)
		index := filepath.Join(tmp, "index")
		c := gitcmd.Cmd{GitDir: w.repo.Common, CommonDir: w.repo.Common, WorkTree: dir, Dir: dir,
			Env: []string{"GIT_INDEX_FILE=" + index}}
		c.Args, c.Parallel = []string{"read-tree", "--reset", "-u", commit}, w.repo.ManyFiles("")
		if _, err = w.repo.Run(ctx, c); err == nil {
			// LFS files get their content; those the store lacks stay
			// their pointers, as in a head.
			_, err = w.materializeLFS(ctx, w.runAs(c), dir, index, nil)
		}
	}
	if err != nil {
		undo()
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return &grove.Error{Code: grove.Internal, Op: op, Path: dir, Err: err}
	}
	return nil
}

func (w *workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return grove.Errorf(grove.FailedPrecondition, "gitbackend: close workspace", "workspace is already closed")
	}
	w.closed = true
	w.repo.StopRefs()
	w.repo.Batch.Stop()
	return nil
}
