package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendutil"
)

// head is one handle on a head. An isolated handle holds the head's
// isolation lock until Close or Destroy.
type head struct {
	w       *workspace
	m       manifest // as bound; the state is read again from the record
	binding grove.Binding
	fs      *dirFS
	iso     *os.File // holds the isolation lock; nil for a shared head

	mu     sync.Mutex
	closed bool
}

var _ backend.Head = (*head)(nil)

// newHead binds a handle to the head m records, taking its isolation lock
// if it is isolated (AlreadyBound if another handle, in any process, holds
// it) unless observe.
func (w *workspace) newHead(op string, m manifest, observe bool) (*head, error) {
	fail := func(code grove.Code, err error) error {
		return &grove.Error{Code: code, Op: prefix + op, Head: m.Name, Err: err}
	}
	var iso *os.File
	if m.Access == grove.Isolated && !observe {
		f, err := os.OpenFile(w.p.isolation(m.ID), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fail(grove.Internal, err)
		}
		ok, err := tryLock(f)
		if !ok {
			_ = f.Close()
			if err != nil {
				return nil, fail(grove.Internal, err)
			}
			return nil, fail(grove.AlreadyBound, fmt.Errorf("isolated head %q is held", m.Name))
		}
		iso = f
	}
	root, err := os.OpenRoot(m.Dir)
	if err != nil {
		if iso != nil {
			_ = iso.Close()
		}
		return nil, fail(grove.NotFound, err)
	}
	p, _ := json.Marshal(payload{Locator: w.p.dir, Name: m.Name, Branch: m.Branch, Dir: m.Dir})
	return &head{
		w: w, m: m, iso: iso,
		fs: &dirFS{root: root, cas: w.p.cas(m.ID)},
		binding: grove.Binding{Version: grove.BindingVersion, Backend: BackendID, Workspace: w.id,
			Head: m.ID, Access: m.Access, Payload: p},
	}, nil
}

// enter runs the checks every blocking call starts with and returns the
// head's record now.
func (h *head) enter(ctx context.Context, op string) (manifest, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return manifest{}, h.errorf(grove.FailedPrecondition, op, "head is closed")
	}
	if err := h.w.b.enter(ctx, op); err != nil {
		return manifest{}, err
	}
	m, ok, err := h.w.manifest(op, h.m.ID)
	switch {
	case err != nil:
		return manifest{}, err
	case !ok:
		return manifest{}, h.errorf(grove.NotFound, op, "the head's record is gone")
	case m.State == grove.StateDestroyed:
		return manifest{}, h.errorf(grove.Destroyed, op, "head was destroyed")
	}
	return m, nil
}

func (h *head) errorf(code grove.Code, op, format string, args ...any) error {
	return &grove.Error{Code: code, Op: prefix + op, Head: h.m.Name, Err: fmt.Errorf(format, args...)}
}

// internal types an unexpected error, as workspace.internal does.
func (h *head) internal(ctx context.Context, op string, err error) error {
	err = h.w.internal(ctx, op, err)
	var be *grove.Error
	if errors.As(err, &be) && be.Head == "" {
		be.Head = h.m.Name
	}
	return err
}

func (h *head) Info() grove.HeadInfo {
	if m, ok, err := h.w.manifest("info", h.m.ID); err == nil && ok {
		return m.info()
	}
	return h.m.info()
}

func (h *head) Binding() grove.Binding {
	b := h.binding
	b.Payload = slices.Clone(b.Payload)
	return b
}

func (h *head) FS() grove.FS { return h.fs }

func (h *head) branchRef() plumbing.ReferenceName { return plumbing.NewBranchReferenceName(h.m.Branch) }

// checkpointRefs is where the head's checkpoints are kept reachable:
// refs/grove/<head-id>/<number>, numbered from 1 in the order they were
// made.
func (h *head) checkpointRefs() string { return "refs/grove/" + string(h.m.ID) + "/" }

// current returns the head's commit, its flattened tree and the tree's
// hash.
func (h *head) current(ctx context.Context, st store, op string) (plumbing.Hash, map[string]entry, plumbing.Hash, error) {
	c, ok, err := st.ref(h.branchRef())
	if err != nil {
		return plumbing.ZeroHash, nil, plumbing.ZeroHash, h.internal(ctx, op, err)
	}
	if !ok {
		return plumbing.ZeroHash, nil, plumbing.ZeroHash, &grove.Error{Code: grove.NotFound, Op: prefix + op, Head: h.m.Name,
			Reason: grove.ReasonBranch, Err: fmt.Errorf("branch %q is gone", h.m.Branch)}
	}
	tree, th, err := st.readTree(ctx, c)
	if err != nil {
		return plumbing.ZeroHash, nil, plumbing.ZeroHash, h.internal(ctx, op, err)
	}
	return c, tree, th, nil
}

// checkpoints lists the head's checkpoints, newest first, and returns the
// number the next one gets.
func (h *head) checkpoints(st store) (newest []plumbing.Hash, next int, err error) {
	iter, err := st.repo.Storer.IterReferences()
	if err != nil {
		return nil, 0, err
	}
	type numbered struct {
		n int
		h plumbing.Hash
	}
	var refs []numbered
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if s, ok := strings.CutPrefix(r.Name().String(), h.checkpointRefs()); ok {
			if n, err := strconv.Atoi(s); err == nil {
				refs = append(refs, numbered{n, r.Hash()})
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(refs, func(a, b numbered) int { return b.n - a.n })
	newest = make([]plumbing.Hash, len(refs))
	for i, r := range refs {
		newest[i] = r.h
	}
	if len(refs) > 0 {
		next = refs[0].n
	}
	return newest, next + 1, nil
}

// Checkpoint scans the head's directory without a lock, then, under the
// workspace's lock, commits what it found if the branch has not moved
// meanwhile (Conflict if it has).
func (h *head) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	const op = "checkpoint"
	if _, err := h.enter(ctx, op); err != nil {
		return grove.CheckpointResult{}, err
	}
	st, err := h.w.store(op)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	parent, tracked, parentTree, err := h.current(ctx, st, op)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	sc, err := scanHead(ctx, h.fs.root, tracked, opts, func(p string, e entry, data []byte) error {
		if tracked[p] == e {
			return nil // the store holds this blob
		}
		_, err := st.writeBlob(data)
		return err
	})
	if err != nil {
		return grove.CheckpointResult{}, h.internal(ctx, op, err)
	}
	tree, err := st.writeTree(sc.files)
	if err != nil {
		return grove.CheckpointResult{}, h.internal(ctx, op, err)
	}
	if tree == parentTree {
		cp, err := st.checkpointOf(parent)
		if err != nil {
			return grove.CheckpointResult{}, h.internal(ctx, op, err)
		}
		return grove.CheckpointResult{Checkpoint: cp, Skipped: sc.skipped}, nil
	}
	unlock, err := h.w.lock(ctx, op)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	defer unlock()
	if now, _, err := st.ref(h.branchRef()); err != nil || now != parent {
		return grove.CheckpointResult{}, h.errorf(grove.Conflict, op, "branch %q moved during the checkpoint", h.m.Branch)
	}
	commit, err := st.writeCommit(tree, parent, opts, time.Now())
	if err == nil {
		err = st.setRef(h.branchRef(), commit)
	}
	next := 0
	if err == nil {
		_, next, err = h.checkpoints(st)
	}
	if err == nil {
		err = st.setRef(plumbing.ReferenceName(fmt.Sprintf("%s%08d", h.checkpointRefs(), next)), commit)
	}
	var cp grove.Checkpoint
	if err == nil {
		cp, err = st.checkpointOf(commit)
	}
	if err != nil {
		return grove.CheckpointResult{}, h.internal(ctx, op, err)
	}
	return grove.CheckpointResult{Checkpoint: cp, New: true, Skipped: sc.skipped}, nil
}

// Restore checks everything before it changes anything: the target, and
// that it tracks no path that is an ignored file of the head with other
// content (Conflict). Then it writes the target's files that differ, each
// replaced atomically, removes the files the target does not hold that
// are not ignored, removes the directories that left empty, and resets
// the branch. Once it starts writing it no longer looks at ctx: an
// interrupted restore is finished by running it again.
func (h *head) Restore(ctx context.Context, to grove.Rev) (backend.RestoreResult, error) {
	const op = "restore"
	if _, err := h.enter(ctx, op); err != nil {
		return backend.RestoreResult{}, err
	}
	st, err := h.w.store(op)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	target, err := st.resolve(op, to)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	want, _, err := st.readTree(ctx, target)
	if err != nil {
		return backend.RestoreResult{}, h.internal(ctx, op, err)
	}
	_, tracked, _, err := h.current(ctx, st, op)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	root := h.fs.root
	sc, err := scanHead(ctx, root, tracked, &backend.CheckpointOptions{MaxNewFileSize: -1}, nil)
	if err != nil {
		return backend.RestoreResult{}, h.internal(ctx, op, err)
	}
	conflict := func(p string) error {
		return &grove.Error{Code: grove.Conflict, Op: prefix + op, Head: h.m.Name, Path: p,
			Err: fmt.Errorf("the target tracks %q, which is an ignored file in the head; restore will not overwrite it", p)}
	}
	// keep lists the target's paths that hold its content already.
	keep := map[string]bool{}
	for p, e := range want {
		ignoredDir := false
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if v, ok := sc.seen[d]; ok && v.ignored {
				if !v.mode.IsDir() {
					return backend.RestoreResult{}, conflict(d)
				}
				ignoredDir = true
			}
		}
		v, ok := sc.seen[p]
		switch {
		case ignoredDir || ok && v.ignored: // not scanned, or ignored
			same, exists := sameFile(root, st, p, e)
			if exists && !same {
				return backend.RestoreResult{}, conflict(p)
			}
			keep[p] = same
		case ok && v.mode.IsDir():
			for k, kv := range sc.seen {
				if kv.ignored && strings.HasPrefix(k, p+"/") {
					return backend.RestoreResult{}, conflict(k)
				}
			}
		default:
			keep[p] = sc.files[p] == e
		}
	}
	if err := grove.ContextError(ctx, prefix+op); err != nil {
		return backend.RestoreResult{}, err
	}

	// From here the head changes: a cancellation stops between two files,
	// the branch left where it was; running the restore again finishes it.
	for i, p := range sortedKeys(want) {
		if keep[p] {
			continue
		}
		if i%64 == 0 {
			if err := grove.ContextError(ctx, prefix+op); err != nil {
				return backend.RestoreResult{}, err
			}
		}
		// Clear the way: a file (or link) where a directory of p must be,
		// a directory where p must be.
		var dirs []string
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs = append(dirs, d)
		}
		for _, d := range slices.Backward(dirs) {
			if fi, err := root.Lstat(d); err == nil && !fi.IsDir() {
				_ = root.Remove(d)
			}
		}
		if fi, err := root.Lstat(p); err == nil && fi.IsDir() {
			_ = root.RemoveAll(p)
		}
		if err := writeEntry(root, st, p, want[p]); err != nil {
			return backend.RestoreResult{}, h.internal(ctx, op, err)
		}
	}
	var emptied []string
	for p, v := range sc.seen {
		if _, ok := want[p]; ok || v.ignored || v.mode.IsDir() {
			continue
		}
		if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return backend.RestoreResult{}, h.internal(ctx, op, err)
		}
		emptied = append(emptied, path.Dir(p))
	}
	// Remove the directories this restore emptied, as git does; one that
	// still holds anything (an ignored file) stays.
	for _, d := range emptied {
		for ; d != "."; d = path.Dir(d) {
			if root.Remove(d) != nil {
				break
			}
		}
	}

	unlock, err := h.w.lock(context.WithoutCancel(ctx), op)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	defer unlock()
	if err := st.setRef(h.branchRef(), target); err != nil {
		return backend.RestoreResult{}, h.internal(ctx, op, err)
	}
	return backend.RestoreResult{Commit: grove.CheckpointID(target.String())}, nil
}

// sameFile reports whether p under root holds exactly what tree entry e
// describes, and whether anything is at p.
func sameFile(root *os.Root, st store, p string, e entry) (same, exists bool) {
	fi, err := root.Lstat(p)
	if err != nil {
		return false, !errors.Is(err, fs.ErrNotExist)
	}
	var data []byte
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.mode != filemode.Symlink {
			return false, true
		}
		t, err := root.Readlink(p)
		if err != nil {
			return false, true
		}
		data = []byte(t)
	case fi.Mode().IsRegular():
		if e.mode == filemode.Symlink || capabilities.FileModes && (e.mode == filemode.Executable) != (fi.Mode()&0o111 != 0) {
			return false, true
		}
		if data, err = root.ReadFile(p); err != nil {
			return false, true
		}
	default:
		return false, true
	}
	return plumbing.ComputeHash(plumbing.BlobObject, data) == e.hash, true
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (h *head) Log(ctx context.Context, opts *backend.LogOptions) ([]grove.Checkpoint, error) {
	const op = "log"
	if _, err := h.enter(ctx, op); err != nil {
		return nil, err
	}
	st, err := h.w.store(op)
	if err != nil {
		return nil, err
	}
	hashes, _, err := h.checkpoints(st)
	if err != nil {
		return nil, h.internal(ctx, op, err)
	}
	if opts != nil && opts.Limit > 0 && len(hashes) > opts.Limit {
		hashes = hashes[:opts.Limit]
	}
	out := make([]grove.Checkpoint, 0, len(hashes))
	for _, c := range hashes {
		cp, err := st.checkpointOf(c)
		if err != nil {
			return nil, h.internal(ctx, op, err)
		}
		out = append(out, cp)
	}
	return out, nil
}

// Commits walks the branch from its tip, skipping every ancestor of since.
func (h *head) Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error) {
	const op = "commits"
	if _, err := h.enter(ctx, op); err != nil {
		return nil, err
	}
	st, err := h.w.store(op)
	if err != nil {
		return nil, err
	}
	base, err := st.resolve(op, since)
	if err != nil {
		return nil, err
	}
	tip, _, _, err := h.current(ctx, st, op)
	if err != nil {
		return nil, err
	}
	walk := func(from plumbing.Hash, seen map[plumbing.Hash]bool, visit func(*object.Commit) error) error {
		c, err := st.repo.CommitObject(from)
		if err != nil {
			return err
		}
		return object.NewCommitPreorderIter(c, seen, nil).ForEach(func(c *object.Commit) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return visit(c)
		})
	}
	ancestors := map[plumbing.Hash]bool{}
	err = walk(base, nil, func(c *object.Commit) error { ancestors[c.Hash] = true; return nil })
	var out []grove.CheckpointID
	if err == nil {
		err = walk(tip, ancestors, func(c *object.Commit) error {
			out = append(out, grove.CheckpointID(c.Hash.String()))
			return nil
		})
	}
	if err != nil && !errors.Is(err, storer.ErrStop) {
		return nil, h.internal(ctx, op, err)
	}
	return out, nil
}

func (h *head) Status(ctx context.Context) (grove.Status, error) {
	const op = "status"
	m, err := h.enter(ctx, op)
	if err != nil {
		return grove.Status{}, err
	}
	st, err := h.w.store(op)
	if err != nil {
		return grove.Status{}, err
	}
	commit, tracked, _, err := h.current(ctx, st, op)
	if err != nil {
		return grove.Status{}, err
	}
	sc, err := scanHead(ctx, h.fs.root, tracked, &backend.CheckpointOptions{}, nil)
	if err != nil {
		return grove.Status{}, h.internal(ctx, op, err)
	}
	s := grove.Status{
		Changes:  sc.changes(tracked),
		Commit:   grove.CheckpointID(commit.String()),
		Archived: m.State == grove.StateArchived,
	}
	s.Dirty = len(s.Changes) > 0
	cps, _, err := h.checkpoints(st)
	if err != nil {
		return grove.Status{}, h.internal(ctx, op, err)
	}
	if len(cps) > 0 {
		s.LastCheckpoint = grove.CheckpointID(cps[0].String())
	}
	return s, nil
}

// Diff reads both trees into memory and compares them with backendutil.
func (h *head) Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error) {
	const op = "diff"
	if _, err := h.enter(ctx, op); err != nil {
		return grove.Diff{}, err
	}
	st, err := h.w.store(op)
	if err != nil {
		return grove.Diff{}, err
	}
	treeOf := func(rev grove.Rev) (backendutil.Tree, error) {
		c, err := st.resolve(op, rev)
		if err != nil {
			return nil, err
		}
		files, _, err := st.readTree(ctx, c)
		if err == nil {
			var t backendutil.Tree
			if t, err = st.backendutilTree(files); err == nil {
				return t, nil
			}
		}
		return nil, h.internal(ctx, op, err)
	}
	a, err := treeOf(from)
	if err != nil {
		return grove.Diff{}, err
	}
	var b backendutil.Tree
	if to == grove.Live {
		_, tracked, _, err := h.current(ctx, st, op)
		if err != nil {
			return grove.Diff{}, err
		}
		b = backendutil.Tree{}
		_, err = scanHead(ctx, h.fs.root, tracked, &backend.CheckpointOptions{}, func(p string, e entry, data []byte) error {
			b[p] = backendutil.File{Data: data, Mode: fileMode(e.mode)}
			return nil
		})
		if err != nil {
			return grove.Diff{}, h.internal(ctx, op, err)
		}
	} else if b, err = treeOf(to); err != nil {
		return grove.Diff{}, err
	}
	return backendutil.Diff(ctx, a, b)
}

func (h *head) SetArchived(ctx context.Context, archived bool) error {
	if _, err := h.enter(ctx, "set archived"); err != nil {
		return err
	}
	return h.w.setArchived(ctx, h.m.ID, archived)
}

// Destroy leaves the head's record as a tombstone, then removes its
// directory. Its branch and checkpoint refs stay.
func (h *head) Destroy(ctx context.Context, opts *backend.DestroyOptions) error {
	const op = "destroy"
	if _, err := h.enter(ctx, op); err != nil {
		return err
	}
	if opts == nil || !opts.SkipTeardown {
		// A teardown that fails refuses the destroy: nothing is removed.
		if err := h.w.runHook(ctx, op, grove.HookTeardown, h.w.teardown, h.m); err != nil {
			return err
		}
	}
	unlock, err := h.w.lock(ctx, op)
	if err != nil {
		return err
	}
	m, _, err := h.w.manifest(op, h.m.ID)
	if err == nil {
		m.State = grove.StateDestroyed
		err = h.w.writeManifest(op, m)
	}
	unlock()
	if err != nil {
		return err
	}
	h.release()
	if err := os.RemoveAll(h.m.Dir); err != nil {
		return &grove.Error{Code: grove.Internal, Op: prefix + op, Head: h.m.Name, Path: h.m.Dir, Err: err}
	}
	return nil
}

// Close releases the head's isolation lock. It deletes nothing.
func (h *head) Close() error {
	if !h.release() {
		return h.errorf(grove.FailedPrecondition, "close", "head is already closed")
	}
	return nil
}

// release marks the handle closed and lets go of its lock and directory;
// it reports false if the handle was closed already.
func (h *head) release() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.closed = true
	if h.iso != nil {
		_ = h.iso.Close()
	}
	_ = h.fs.root.Close()
	return true
}
