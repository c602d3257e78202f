package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendutil"
)

// workspace is one open workspace.
type workspace struct {
	b        *Backend
	p        paths
	id       grove.WorkspaceID
	headsDir string

	setup, teardown *grove.Hook // run in a head made, and before one is destroyed

	mu     sync.Mutex
	closed bool
}

var _ backend.Workspace = (*workspace)(nil)

func (w *workspace) enter(ctx context.Context, op string) error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return grove.Errorf(grove.FailedPrecondition, prefix+op, "workspace is closed")
	}
	return w.b.enter(ctx, op)
}

// store opens the workspace's repository.
func (w *workspace) store(op string) (store, error) {
	repo, err := git.PlainOpen(w.p.repo())
	if err != nil {
		return store{}, &grove.Error{Code: grove.Internal, Op: prefix + op, Path: w.p.repo(), Err: err}
	}
	return store{repo}, nil
}

// lock takes the workspace's lock, which serializes changes to refs and
// head records across processes, waiting until ctx ends.
func (w *workspace) lock(ctx context.Context, op string) (unlock func(), err error) {
	return lockFile(ctx, op, filepath.Join(w.p.state(), "lock"))
}

// lockWait bounds how long lockFile waits for a lock another holder keeps.
const lockWait = 10 * time.Second

// lockFile takes the kernel lock of file, polling until ctx ends
// (Canceled) or lockWait passes (Busy). A holder that dies loses its lock.
func lockFile(ctx context.Context, op, file string) (unlock func(), err error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: prefix + op, Path: file, Err: err}
	}
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := tryLock(f)
		if ok {
			return func() { _ = f.Close() }, nil
		}
		if err != nil {
			_ = f.Close()
			return nil, &grove.Error{Code: grove.Internal, Op: prefix + op, Path: file, Err: err}
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, &grove.Error{Code: grove.Busy, Op: prefix + op, Path: file, Err: fmt.Errorf("held by another holder for %v", lockWait)}
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, grove.ContextError(ctx, prefix+op)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// manifest reads the record of head id; ok is false if there is none.
func (w *workspace) manifest(op string, id grove.HeadID) (m manifest, ok bool, err error) {
	if !uuidRE.MatchString(string(id)) {
		return manifest{}, false, nil
	}
	err = readJSON(w.p.manifest(id), &m)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return manifest{}, false, nil
	case err != nil:
		return manifest{}, false, &grove.Error{Code: grove.Internal, Op: prefix + op, Head: string(id), Err: err}
	}
	return m, true, nil
}

// manifestsList reads every head's record, tombstones included.
func (w *workspace) manifestsList(op string) ([]manifest, error) {
	ents, err := os.ReadDir(w.p.manifests())
	if err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: prefix + op, Path: w.p.manifests(), Err: err}
	}
	var out []manifest
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		m, ok, err := w.manifest(op, grove.HeadID(id))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func (w *workspace) writeManifest(op string, m manifest) error {
	if err := writeJSON(w.p.manifest(m.ID), m); err != nil {
		return &grove.Error{Code: grove.Internal, Op: prefix + op, Head: m.Name, Err: err}
	}
	return nil
}

func (w *workspace) Info() grove.WorkspaceInfo {
	return grove.WorkspaceInfo{ID: w.id, Backend: BackendID, Locator: w.p.dir}
}

// CreateHead makes the head's directory (HeadSpec.Dir, or the head's name
// under the heads directory; it must be absent or empty, AlreadyExists
// otherwise), writes the base revision's files into it, and records the
// head, all under the workspace's lock. Attach is Unimplemented.
func (w *workspace) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	const op = "create"
	if err := w.enter(ctx, op); err != nil {
		return nil, err
	}
	fail := func(code grove.Code, path string, format string, args ...any) error {
		return &grove.Error{Code: code, Op: prefix + op, Head: spec.Name, Path: path, Err: fmt.Errorf(format, args...)}
	}
	if spec.Attach != "" {
		return nil, fail(grove.Unimplemented, spec.Attach, "the dir backend cannot attach to a checkout")
	}
	unlock, err := w.lock(ctx, op)
	if err != nil {
		return nil, err
	}
	defer unlock()
	all, err := w.manifestsList(op)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(all, func(m manifest) bool { return m.Name == spec.Name && m.State != grove.StateDestroyed }) {
		return nil, fail(grove.AlreadyExists, "", "a head named %q exists", spec.Name)
	}
	st, err := w.store(op)
	if err != nil {
		return nil, err
	}
	from := spec.From
	if from == "" {
		from = grove.Rev(plumbing.HEAD)
	}
	base, err := st.resolve(op, from)
	if err != nil {
		return nil, err
	}
	exists := func(branch string) bool {
		_, ok, _ := st.ref(plumbing.NewBranchReferenceName(branch))
		return ok
	}
	branch := spec.Branch
	if branch == "" {
		branch = "grove/" + spec.Name
		for n := 2; exists(branch); n++ {
			branch = fmt.Sprintf("grove/%s-%d", spec.Name, n)
		}
	} else if exists(branch) {
		return nil, fail(grove.AlreadyExists, branch, "branch %q exists", branch)
	}
	dir := spec.Dir
	if dir == "" {
		dir = filepath.Join(w.headsDir, spec.Name)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fail(grove.InvalidArgument, spec.Dir, "%v", err)
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return nil, fail(grove.AlreadyExists, dir, "%s exists and is not a directory", dir)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fail(grove.AlreadyExists, dir, "directory %s exists and is not empty", dir)
	}
	tree, _, err := st.readTree(ctx, base)
	if err != nil {
		return nil, w.internal(ctx, op, err)
	}
	undo, err := writeFiles(ctx, prefix+op, dir, st, tree)
	if err != nil {
		return nil, err
	}
	// From here on, a failure undoes what was done.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		undo()
		return nil, fail(grove.Internal, dir, "%v", err)
	}
	m := manifest{ID: grove.HeadID(newUUID()), Name: spec.Name, Access: spec.Access, Branch: branch, Dir: dir,
		Base: grove.CheckpointID(base.String()), State: grove.StateActive}
	ref := plumbing.NewBranchReferenceName(branch)
	if err = st.setRef(ref, base); err == nil {
		if err = w.writeManifest(op, m); err == nil {
			var h *head
			if h, err = w.newHead(op, m, false); err == nil {
				if err = w.runHook(ctx, op, grove.HookSetup, w.setup, m); err == nil {
					return h, nil
				}
				h.release() // a failed setup undoes the create whole
			}
			_ = os.Remove(w.p.manifest(m.ID))
		}
		_ = st.repo.Storer.RemoveReference(ref)
	}
	undo()
	return nil, w.internal(ctx, op, err)
}

// configure takes the workspace's hooks, run on the host: dir heads are
// no Sealers, so under a sandbox a hook is Unimplemented. (A Remote, which
// the dir backend does not declare, the workspace layer refuses.)
func (w *workspace) configure(op string, setup, teardown *grove.Hook, sb *grove.Sandbox) error {
	if (setup != nil || teardown != nil) && sb != nil && sb.Kind != "" && sb.Kind != grove.SandboxNone {
		return &grove.Error{Code: grove.Unimplemented, Op: op, Err: errors.New("the dir backend runs hooks on the host only: its heads are not sealed")}
	}
	w.setup, w.teardown = setup, teardown
	return nil
}

// runHook runs hook h of kind in head m's directory (see backendutil.RunHook).
func (w *workspace) runHook(ctx context.Context, op, kind string, h *grove.Hook, m manifest) error {
	return backendutil.RunHook(ctx, nil, prefix+op, m.Name, kind, h, m.Dir, []string{
		"GROVE_HEAD=" + m.Name, "GROVE_HEAD_ID=" + string(m.ID), "GROVE_HEAD_DIR=" + m.Dir, "GROVE_REPO=" + w.p.dir})
}

// internal types an unexpected error: Canceled if ctx ended, Internal
// otherwise; an error that is already typed keeps its code.
func (w *workspace) internal(ctx context.Context, op string, err error) error {
	var be *grove.Error
	if errors.As(err, &be) {
		return err
	}
	if cerr := grove.ContextError(ctx, prefix+op); cerr != nil {
		return cerr
	}
	return &grove.Error{Code: grove.Internal, Op: prefix + op, Err: err}
}

// OpenHead opens the live head with that name.
func (w *workspace) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	const op = "open"
	if err := w.enter(ctx, op); err != nil {
		return nil, err
	}
	all, err := w.manifestsList(op)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(m manifest) bool { return m.Name == name && m.State != grove.StateDestroyed })
	if i < 0 {
		return nil, &grove.Error{Code: grove.NotFound, Op: prefix + op, Head: name, Reason: grove.ReasonMissing, Err: fmt.Errorf("no head named %q", name)}
	}
	return w.openHead(ctx, op, all[i], opts)
}

// openHead checks that the head's directory (NotFound, missing) and branch
// (NotFound, branch) exist and that it is not archived (Archived unless
// opts.AllowArchived, which unarchives it, or opts.ReadOnly), and binds it,
// taking its isolation lock (AlreadyBound if held) unless opts.ReadOnly.
func (w *workspace) openHead(ctx context.Context, op string, m manifest, opts *backend.ReopenOptions) (*head, error) {
	fail := func(code grove.Code, r grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: prefix + op, Head: m.Name, Reason: r, Err: fmt.Errorf(format, args...)}
	}
	if fi, err := os.Lstat(m.Dir); err != nil || !fi.IsDir() {
		return nil, fail(grove.NotFound, grove.ReasonMissing, "the head's directory %s is gone", m.Dir)
	}
	st, err := w.store(op)
	if err != nil {
		return nil, err
	}
	if _, ok, err := st.ref(plumbing.NewBranchReferenceName(m.Branch)); err != nil || !ok {
		return nil, fail(grove.NotFound, grove.ReasonBranch, "the head's branch %q is gone", m.Branch)
	}
	allow := opts != nil && opts.AllowArchived
	observe := opts != nil && opts.ReadOnly
	if m.State == grove.StateArchived && !allow && !observe {
		return nil, fail(grove.Archived, "", "head %q is archived", m.Name)
	}
	h, err := w.newHead(op, m, observe)
	if err != nil {
		return nil, err
	}
	if m.State == grove.StateArchived && !observe {
		if err := h.SetArchived(ctx, false); err != nil {
			_ = h.Close()
			return nil, err
		}
	}
	return h, nil
}

func (w *workspace) Heads(ctx context.Context) ([]grove.HeadInfo, error) {
	if err := w.enter(ctx, "heads"); err != nil {
		return nil, err
	}
	all, err := w.manifestsList("heads")
	if err != nil {
		return nil, err
	}
	var out []grove.HeadInfo
	for _, m := range all {
		if m.State != grove.StateDestroyed {
			out = append(out, m.info())
		}
	}
	slices.SortFunc(out, func(a, b grove.HeadInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (w *workspace) SetArchived(ctx context.Context, id grove.HeadID, archived bool) error {
	if err := w.enter(ctx, "set archived"); err != nil {
		return err
	}
	return w.setArchived(ctx, id, archived)
}

// setArchived changes a head's state under the workspace's lock.
func (w *workspace) setArchived(ctx context.Context, id grove.HeadID, archived bool) error {
	const op = "set archived"
	unlock, err := w.lock(ctx, op)
	if err != nil {
		return err
	}
	defer unlock()
	m, ok, err := w.manifest(op, id)
	switch {
	case err != nil:
		return err
	case !ok:
		return &grove.Error{Code: grove.NotFound, Op: prefix + op, Head: string(id), Err: fmt.Errorf("no head %s", id)}
	case m.State == grove.StateDestroyed:
		return &grove.Error{Code: grove.Destroyed, Op: prefix + op, Head: m.Name, Err: fmt.Errorf("head %q was destroyed", m.Name)}
	}
	m.State = grove.StateActive
	if archived {
		m.State = grove.StateArchived
	}
	return w.writeManifest(op, m)
}

// Materialize writes the tree of at into dir, which must be empty or
// absent and must not lie in a head's directory (FailedPrecondition).
func (w *workspace) Materialize(ctx context.Context, at grove.Rev, dir string) error {
	const op = "materialize"
	if err := w.enter(ctx, op); err != nil {
		return err
	}
	st, err := w.store(op)
	if err != nil {
		return err
	}
	c, err := st.resolve(op, at)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return &grove.Error{Code: grove.InvalidArgument, Op: prefix + op, Path: dir, Err: err}
	}
	all, err := w.manifestsList(op)
	if err != nil {
		return err
	}
	canon := abs
	if d, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		canon = filepath.Join(d, filepath.Base(abs))
	}
	for _, m := range all {
		if rel, err := filepath.Rel(m.Dir, canon); err == nil && filepath.IsLocal(rel) && m.State != grove.StateDestroyed {
			return &grove.Error{Code: grove.FailedPrecondition, Op: prefix + op, Path: dir, Err: fmt.Errorf("%s lies in head %q", dir, m.Name)}
		}
	}
	if fi, err := os.Lstat(abs); err == nil && !fi.IsDir() {
		return &grove.Error{Code: grove.FailedPrecondition, Op: prefix + op, Path: dir, Err: errors.New("destination is not a directory")}
	}
	if ents, err := os.ReadDir(abs); err == nil && len(ents) > 0 {
		return &grove.Error{Code: grove.FailedPrecondition, Op: prefix + op, Path: dir, Err: errors.New("destination is not empty")}
	}
	tree, _, err := st.readTree(ctx, c)
	if err != nil {
		return w.internal(ctx, op, err)
	}
	_, err = writeFiles(ctx, prefix+op, abs, st, tree)
	return err
}

// writeFiles writes the files of tree into dir, which must be empty or
// absent, with their modes and symlinks. On a failure it removes what it
// wrote and leaves dir as it found it; after a success, undo does that.
func writeFiles(ctx context.Context, op, dir string, st store, tree map[string]entry) (undo func(), err error) {
	_, statErr := os.Lstat(dir)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: op, Path: dir, Err: err}
	}
	undo = func() {
		if created {
			_ = os.RemoveAll(dir)
			return
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		undo()
		return nil, &grove.Error{Code: grove.Internal, Op: op, Path: dir, Err: err}
	}
	defer root.Close()
	for p, e := range tree {
		if err := ctx.Err(); err != nil {
			undo()
			return nil, grove.ContextError(ctx, op)
		}
		if err := writeEntry(root, st, p, e); err != nil {
			undo()
			return nil, &grove.Error{Code: grove.Internal, Op: op, Path: filepath.Join(dir, p), Err: err}
		}
	}
	return undo, nil
}

// writeEntry writes the file of tree entry e at p under root, creating its
// parent directories, replacing what is there atomically: a temporary file
// (or link) beside it, renamed over it.
func writeEntry(root *os.Root, st store, p string, e entry) error {
	data, err := st.readBlob(e.hash)
	if err != nil {
		return err
	}
	dir := filepath.Dir(filepath.FromSlash(p))
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, tempPrefix+newUUID())
	if e.mode == filemode.Symlink {
		err = root.Symlink(string(data), tmp)
	} else {
		err = writeTemp(root, tmp, data, fileMode(e.mode))
	}
	if err == nil {
		err = root.Rename(tmp, filepath.FromSlash(p))
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// writeTemp creates the new file tmp under root with data and mode (not
// narrowed by the umask).
func writeTemp(root *os.Root, tmp string, data []byte, mode fs.FileMode) error {
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return grove.Errorf(grove.FailedPrecondition, prefix+"close workspace", "workspace is already closed")
	}
	w.closed = true
	return nil
}
