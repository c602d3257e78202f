package memorybackend

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
)

// head is one handle on a head. Isolated handles hold the head's lock until
// Close or Destroy.
type head struct {
	w       *workspace
	hs      *headState
	binding grove.Binding

	// observing is set for a handle opened ReadOnly: it holds no
	// isolation, so its Close releases none.
	observing bool

	mu     sync.Mutex
	closed bool
}

var _ backend.Head = (*head)(nil)

func newHead(w *workspace, hs *headState) *head {
	p, _ := json.Marshal(payload{Locator: w.ws.locator, Name: hs.info.Name, Branch: hs.info.Branch})
	return &head{w: w, hs: hs, binding: grove.Binding{
		Version:   grove.BindingVersion,
		Backend:   BackendID,
		Workspace: w.ws.id,
		Head:      hs.info.ID,
		Access:    hs.info.Access,
		Payload:   p,
	}}
}

// enter runs the checks every blocking call starts with and returns the
// head's op prefix.
func (h *head) enter(ctx context.Context, op string) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return &grove.Error{Code: grove.FailedPrecondition, Op: "memorybackend: " + op, Head: h.hs.info.Name, Err: fmt.Errorf("head is closed")}
	}
	if err := h.w.b.enter(ctx, op); err != nil {
		return err
	}
	h.w.ws.mu.Lock()
	destroyed := h.hs.info.State == grove.StateDestroyed
	h.w.ws.mu.Unlock()
	if destroyed {
		return &grove.Error{Code: grove.Destroyed, Op: "memorybackend: " + op, Head: h.hs.info.Name, Err: fmt.Errorf("head was destroyed")}
	}
	return nil
}

func (h *head) errorf(code grove.Code, op, format string, args ...any) error {
	return &grove.Error{Code: code, Op: "memorybackend: " + op, Head: h.hs.info.Name, Err: fmt.Errorf(format, args...)}
}

func (h *head) Info() grove.HeadInfo {
	h.w.ws.mu.Lock()
	defer h.w.ws.mu.Unlock()
	return h.hs.info
}

func (h *head) Binding() grove.Binding {
	b := h.binding
	b.Payload = slices.Clone(b.Payload)
	return b
}

func (h *head) FS() grove.FS { return h.hs.fs }

func (h *head) branchRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(h.hs.info.Branch)
}

// current returns the head's commit and its flattened tree; callers hold
// the workspace's lock.
func (h *head) current(ctx context.Context, op string) (plumbing.Hash, map[string]entry, error) {
	c, ok := h.w.ws.ref(h.branchRef())
	if !ok {
		return plumbing.ZeroHash, nil, &grove.Error{Code: grove.NotFound, Op: "memorybackend: " + op, Head: h.hs.info.Name,
			Reason: grove.ReasonBranch, Err: fmt.Errorf("branch %q is gone", h.hs.info.Branch)}
	}
	tree, _, err := h.w.ws.st.readTree(ctx, c)
	if err != nil {
		return plumbing.ZeroHash, nil, h.internal(op, err)
	}
	return c, tree, nil
}

func (h *head) internal(op string, err error) error {
	if grove.CodeOf(err) == grove.Canceled {
		return &grove.Error{Code: grove.Canceled, Op: "memorybackend: " + op, Head: h.hs.info.Name, Err: err}
	}
	return &grove.Error{Code: grove.Internal, Op: "memorybackend: " + op, Head: h.hs.info.Name, Err: err}
}

func (h *head) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	const op = "checkpoint"
	if err := h.enter(ctx, "Checkpoint"); err != nil {
		return grove.CheckpointResult{}, err
	}
	nodes, err := h.hs.fs.snapshot()
	if err != nil {
		return grove.CheckpointResult{}, h.errorf(grove.NotFound, op, "%v", err)
	}
	ws := h.w.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	parent, tracked, err := h.current(ctx, op)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	c, err := captureTree(ctx, nodes, tracked, opts)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	written := 0
	for p, e := range c.files {
		if tracked[p].hash == e.hash {
			continue // the commit already holds this blob
		}
		if written++; stopped(ctx, written) {
			return grove.CheckpointResult{}, grove.ContextError(ctx, "memorybackend: "+op)
		}
		if _, err := ws.st.writeBlob(c.data[p]); err != nil {
			return grove.CheckpointResult{}, h.internal(op, err)
		}
	}
	tree, err := ws.st.writeTree(c.files)
	if err != nil {
		return grove.CheckpointResult{}, h.internal(op, err)
	}
	pc, err := ws.st.repo.CommitObject(parent)
	if err != nil {
		return grove.CheckpointResult{}, h.internal(op, err)
	}
	if pc.TreeHash == tree {
		cp, err := ws.st.checkpointOf(parent)
		if err != nil {
			return grove.CheckpointResult{}, h.internal(op, err)
		}
		return grove.CheckpointResult{Checkpoint: cp, Skipped: c.skipped}, nil
	}
	if err := grove.ContextError(ctx, "memorybackend: "+op); err != nil {
		return grove.CheckpointResult{}, err
	}
	commit, err := ws.st.writeCommit(tree, parent, opts, time.Now())
	if err != nil {
		return grove.CheckpointResult{}, h.internal(op, err)
	}
	// Compare-and-swap the branch from the parent we read.
	newRef := plumbing.NewHashReference(h.branchRef(), commit)
	oldRef := plumbing.NewHashReference(h.branchRef(), parent)
	if err := ws.st.repo.Storer.CheckAndSetReference(newRef, oldRef); err != nil {
		return grove.CheckpointResult{}, h.errorf(grove.Conflict, op, "branch moved during the checkpoint: %v", err)
	}
	h.hs.seq++
	ref := plumbing.ReferenceName(fmt.Sprintf("%s%08d", checkpointRefPrefix(h.hs.info.ID), h.hs.seq))
	if err := ws.setRef(ref, commit); err != nil {
		return grove.CheckpointResult{}, h.internal(op, err)
	}
	cp, err := ws.st.checkpointOf(commit)
	if err != nil {
		return grove.CheckpointResult{}, h.internal(op, err)
	}
	return grove.CheckpointResult{Checkpoint: cp, New: true, Skipped: c.skipped}, nil
}

func (h *head) Restore(ctx context.Context, to grove.Rev) (backend.RestoreResult, error) {
	const op = "restore"
	if err := h.enter(ctx, "Restore"); err != nil {
		return backend.RestoreResult{}, err
	}
	ws := h.w.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	target, err := ws.st.resolve(op, to)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	want, _, err := ws.st.readTree(ctx, target)
	if err != nil {
		return backend.RestoreResult{}, h.internal(op, err)
	}
	_, tracked, err := h.current(ctx, op)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	if err := grove.ContextError(ctx, "memorybackend: "+op); err != nil {
		return backend.RestoreResult{}, err
	}

	m := h.hs.fs
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone {
		return backend.RestoreResult{}, h.errorf(grove.NotFound, op, "%v", errGone)
	}
	nodes := m.nodes
	// Which files are ignored is decided by the rules in force now, before
	// anything changes.
	ig := newIgnorer(nodes)
	keep := func(p string, n *node) bool { // an untracked, ignored file or directory
		_, isTracked := tracked[p]
		return !isTracked && ig.Ignored(p, n.isDir())
	}
	if p, ok := collision(nodes, want, keep); ok {
		return backend.RestoreResult{}, h.conflict(op, p)
	}

	next := make(map[string]*node, len(nodes))
	removed := map[string]bool{}
	for p, n := range nodes {
		if _, ok := want[p]; ok {
			continue
		}
		if n.isDir() || keep(p, n) {
			next[p] = n
			continue
		}
		removed[parentOf(p)] = true
	}
	now := time.Now()
	for p, e := range want {
		for d := parentOf(p); d != "."; d = parentOf(d) {
			if n := next[d]; n == nil || !n.isDir() {
				next[d] = &node{mode: fs.ModeDir | 0o755, mtime: now}
			}
		}
		if n := nodes[p]; blobEqual(n, e) {
			next[p] = n
			continue
		}
		// Only content that changes is read from the store. Nothing has
		// been swapped in yet, so a failure here changes no file.
		data, err := ws.st.readBlob(e.hash)
		if err != nil {
			return backend.RestoreResult{}, h.internal(op, err)
		}
		next[p] = &node{mode: fileMode(e.mode), data: data, mtime: now}
	}
	prune(next, removed)
	if err := ws.setRef(h.branchRef(), target); err != nil {
		return backend.RestoreResult{}, h.internal(op, err)
	}
	m.nodes = next
	return backend.RestoreResult{Commit: grove.CheckpointID(target.String())}, nil
}

func (h *head) conflict(op, p string) error {
	return &grove.Error{Code: grove.Conflict, Op: "memorybackend: " + op, Head: h.hs.info.Name, Path: p,
		Err: fmt.Errorf("the target tracks %q, which is an ignored file in the head; restore will not overwrite it", p)}
}

// checkpoints lists the head's checkpoint refs, newest first; callers hold
// the workspace's lock.
func (h *head) checkpoints() ([]plumbing.Hash, error) {
	prefix := checkpointRefPrefix(h.hs.info.ID)
	iter, err := h.w.ws.st.repo.Storer.IterReferences()
	if err != nil {
		return nil, err
	}
	type numbered struct {
		n int
		h plumbing.Hash
	}
	var refs []numbered
	err = iter.ForEach(func(r *plumbing.Reference) error {
		name := r.Name().String()
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		n, err := strconv.Atoi(name[len(prefix):])
		if err == nil {
			refs = append(refs, numbered{n, r.Hash()})
		}
		return nil
	})
	if err != nil && err != storer.ErrStop {
		return nil, err
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].n > refs[j].n })
	out := make([]plumbing.Hash, len(refs))
	for i, r := range refs {
		out[i] = r.h
	}
	return out, nil
}

func (h *head) Log(ctx context.Context, opts *backend.LogOptions) ([]grove.Checkpoint, error) {
	const op = "log"
	if err := h.enter(ctx, "Log"); err != nil {
		return nil, err
	}
	h.w.ws.mu.Lock()
	defer h.w.ws.mu.Unlock()
	hashes, err := h.checkpoints()
	if err != nil {
		return nil, h.internal(op, err)
	}
	if opts != nil && opts.Limit > 0 && len(hashes) > opts.Limit {
		hashes = hashes[:opts.Limit]
	}
	out := make([]grove.Checkpoint, 0, len(hashes))
	for _, c := range hashes {
		cp, err := h.w.ws.st.checkpointOf(c)
		if err != nil {
			return nil, h.internal(op, err)
		}
		out = append(out, cp)
	}
	return out, nil
}

func (h *head) Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error) {
	const op = "commits"
	if err := h.enter(ctx, "Commits"); err != nil {
		return nil, err
	}
	ws := h.w.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	base, err := ws.st.resolve(op, since)
	if err != nil {
		return nil, err
	}
	tip, ok := ws.ref(h.branchRef())
	if !ok {
		return nil, h.errorf(grove.NotFound, op, "branch %q is gone", h.hs.info.Branch)
	}
	seen := map[plumbing.Hash]bool{}
	// walk visits the ancestors of start not seen yet, collecting them into
	// out unless only marking them as seen.
	walk := func(start plumbing.Hash, mark bool, out *[]*object.Commit) error {
		stack := []plumbing.Hash{start}
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[c] {
				continue
			}
			seen[c] = true
			obj, err := ws.st.repo.CommitObject(c)
			if err != nil {
				return err
			}
			if !mark {
				*out = append(*out, obj)
			}
			stack = append(stack, obj.ParentHashes...)
		}
		return nil
	}
	if err := walk(base, true, nil); err != nil {
		return nil, h.internal(op, err)
	}
	var gained []*object.Commit
	if err := walk(tip, false, &gained); err != nil {
		return nil, h.internal(op, err)
	}
	sort.SliceStable(gained, func(i, j int) bool { return gained[i].Committer.When.After(gained[j].Committer.When) })
	out := make([]grove.CheckpointID, len(gained))
	for i, c := range gained {
		out[i] = grove.CheckpointID(c.Hash.String())
	}
	return out, nil
}

func (h *head) Status(ctx context.Context) (grove.Status, error) {
	const op = "status"
	if err := h.enter(ctx, "Status"); err != nil {
		return grove.Status{}, err
	}
	nodes, err := h.hs.fs.snapshot()
	if err != nil {
		return grove.Status{}, h.errorf(grove.NotFound, op, "%v", err)
	}
	ws := h.w.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	commit, tracked, err := h.current(ctx, op)
	if err != nil {
		return grove.Status{}, err
	}
	now, err := captureTree(ctx, nodes, tracked, &backend.CheckpointOptions{})
	if err != nil {
		return grove.Status{}, err
	}
	st := grove.Status{
		Changes:  changes(now, tracked),
		Commit:   grove.CheckpointID(commit.String()),
		Archived: h.hs.info.State == grove.StateArchived,
	}
	st.Dirty = len(st.Changes) > 0
	cps, err := h.checkpoints()
	if err != nil {
		return grove.Status{}, h.internal(op, err)
	}
	if len(cps) > 0 {
		st.LastCheckpoint = grove.CheckpointID(cps[0].String())
	}
	return st, nil
}

func (h *head) Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error) {
	const op = "diff"
	if err := h.enter(ctx, "Diff"); err != nil {
		return grove.Diff{}, err
	}
	var nodes map[string]*node
	if to == grove.Live {
		var err error
		if nodes, err = h.hs.fs.snapshot(); err != nil {
			return grove.Diff{}, h.errorf(grove.NotFound, op, "%v", err)
		}
	}
	ws := h.w.ws
	ws.mu.Lock()
	defer ws.mu.Unlock()
	treeOf := func(rev grove.Rev) (*object.Tree, error) {
		c, err := ws.st.resolve(op, rev)
		if err != nil {
			return nil, err
		}
		co, err := ws.st.repo.CommitObject(c)
		if err != nil {
			return nil, h.internal(op, err)
		}
		t, err := co.Tree()
		if err != nil {
			return nil, h.internal(op, err)
		}
		return t, nil
	}
	a, err := treeOf(from)
	if err != nil {
		return grove.Diff{}, err
	}
	var b *object.Tree
	if to == grove.Live {
		_, tracked, err := h.current(ctx, op)
		if err != nil {
			return grove.Diff{}, err
		}
		c, err := captureTree(ctx, nodes, tracked, &backend.CheckpointOptions{})
		if err != nil {
			return grove.Diff{}, err
		}
		for p, e := range c.files {
			if tracked[p].hash == e.hash {
				continue // the commit already holds this blob
			}
			if _, err := ws.st.writeBlob(c.data[p]); err != nil {
				return grove.Diff{}, h.internal(op, err)
			}
		}
		th, err := ws.st.writeTree(c.files)
		if err != nil {
			return grove.Diff{}, h.internal(op, err)
		}
		if b, err = ws.st.repo.TreeObject(th); err != nil {
			return grove.Diff{}, h.internal(op, err)
		}
	} else if b, err = treeOf(to); err != nil {
		return grove.Diff{}, err
	}
	// go-git reports a context that ended during the diff as its own
	// object.ErrCanceled: answer the context's error instead.
	chs, err := object.DiffTreeWithOptions(ctx, a, b, object.DefaultDiffTreeOptions)
	if err != nil {
		if cerr := grove.ContextError(ctx, "memorybackend: "+op); cerr != nil {
			return grove.Diff{}, cerr
		}
		return grove.Diff{}, h.internal(op, err)
	}
	patch, err := chs.PatchContext(ctx)
	if err != nil {
		if cerr := grove.ContextError(ctx, "memorybackend: "+op); cerr != nil {
			return grove.Diff{}, cerr
		}
		return grove.Diff{}, h.internal(op, err)
	}
	d := grove.Diff{Patch: patch.String()}
	for _, s := range patch.Stats() {
		d.Files = append(d.Files, grove.FileStat{Path: s.Name, Added: s.Addition, Deleted: s.Deletion})
	}
	slices.SortFunc(d.Files, func(a, b grove.FileStat) int { return strings.Compare(a.Path, b.Path) })
	return d, nil
}

func (h *head) SetArchived(ctx context.Context, archived bool) error {
	if err := h.enter(ctx, "SetArchived"); err != nil {
		return err
	}
	h.w.ws.mu.Lock()
	defer h.w.ws.mu.Unlock()
	return setArchived(h.hs, h.hs.info.Name, archived)
}

func (h *head) Destroy(ctx context.Context, opts *backend.DestroyOptions) error {
	if err := h.enter(ctx, "Destroy"); err != nil {
		return err
	}
	h.w.ws.mu.Lock()
	h.hs.info.State = grove.StateDestroyed
	h.hs.held = false
	h.w.ws.mu.Unlock()
	m := h.hs.fs
	m.mu.Lock()
	m.gone, m.nodes = true, nil
	m.mu.Unlock()
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	return nil
}

func (h *head) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return h.errorf(grove.FailedPrecondition, "close", "head is already closed")
	}
	h.closed = true
	if h.hs.info.Access == grove.Isolated && !h.observing {
		h.w.ws.mu.Lock()
		h.hs.held = false
		h.w.ws.mu.Unlock()
	}
	return nil
}

// collision is the first kept (untracked, ignored) file or directory a
// restore to want would write over, if any.
func collision(nodes map[string]*node, want map[string]entry, keep func(string, *node) bool) (string, bool) {
	for p, e := range want {
		for d := parentOf(p); d != "."; d = parentOf(d) {
			if n := nodes[d]; n != nil && !n.isDir() && keep(d, n) {
				return d, true
			}
		}
		n := nodes[p]
		if n == nil {
			continue
		}
		if n.isDir() {
			for k, kn := range nodes {
				if strings.HasPrefix(k, p+"/") && keep(k, kn) {
					return k, true
				}
			}
			continue
		}
		if keep(p, n) && !blobEqual(n, e) {
			return p, true
		}
	}
	return "", false
}

// prune drops from next the directories emptied by a restore (removed
// holds the parents of what it removed; a directory holding a file in its
// subtree keeps it), as git does, and the stale entries under paths that
// are now files.
func prune(next map[string]*node, removed map[string]bool) {
	for changed := true; changed; {
		changed = false
		for d := range removed {
			if d == "." || next[d] == nil {
				delete(removed, d)
				continue
			}
			empty := true
			for k := range next {
				if parentOf(k) == d && k != d {
					empty = false
					break
				}
			}
			delete(removed, d)
			if empty {
				delete(next, d)
				removed[parentOf(d)] = true
				changed = true
			}
		}
	}
	// Drop stale entries under paths that are now files.
	for k := range next {
		for d := parentOf(k); d != "."; d = parentOf(d) {
			if n := next[d]; n != nil && !n.isDir() {
				delete(next, k)
				break
			}
		}
	}
}
