package gitbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/lock"
)

// head is one handle on a head. An isolated handle holds the head's
// isolation lock until Close or Destroy.
type head struct {
	w       *workspace
	binding backend.Binding
	fs      *diskFS

	mu     sync.Mutex
	mf     manifest
	bind   *lock.Lock
	closed bool
}

var _ backend.Head = (*head)(nil)

func (w *workspace) newHead(mf *manifest, bl *lock.Lock) (*head, error) {
	fsys, err := newDiskFS(mf.Dir, mf.ID)
	if err != nil {
		if bl != nil {
			_ = bl.Unlock()
		}
		return nil, &backend.Error{Code: backend.NotFound, Op: "gitbackend: open head", Head: mf.Name, Reason: backend.ReasonMissing, Err: err}
	}
	p, _ := json.Marshal(payload{Repo: w.repo.common, Dir: mf.Dir, Name: mf.Name, Branch: mf.Branch})
	return &head{
		w: w, fs: fsys, mf: *mf, bind: bl,
		binding: backend.Binding{
			Version: backend.BindingVersion, Backend: BackendID, Workspace: w.id,
			Head: mf.ID, Access: mf.Access, Payload: p,
		},
	}, nil
}

func (h *head) manifest() manifest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mf
}

func (h *head) Info() backend.HeadInfo {
	mf := h.manifest()
	return mf.info()
}

func (h *head) Binding() backend.Binding {
	b := h.binding
	b.Payload = slices.Clone(b.Payload)
	return b
}

func (h *head) FS() backend.FS { return h.fs }

func (h *head) fail(code backend.Code, op string, format string, args ...any) error {
	return &backend.Error{Code: code, Op: "gitbackend: " + op, Head: h.mf.Name, Err: fmt.Errorf(format, args...)}
}

// wrap gives a git failure the head's operation, keeping Canceled.
func (h *head) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var be *backend.Error
	if errors.As(err, &be) && be.Code != backend.Internal {
		return err
	}
	return &backend.Error{Code: backend.Internal, Op: "gitbackend: " + op, Head: h.mf.Name, Err: err}
}

// enter runs the checks every call starts with: the handle and the backend
// are open (a head outlives its workspace's Close), the context is live,
// and the head was not destroyed meanwhile by another handle or process.
func (h *head) enter(ctx context.Context, op string) (manifest, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return manifest{}, h.fail(backend.FailedPrecondition, op, "head is closed")
	}
	if _, err := h.w.b.enter(ctx, op); err != nil {
		return manifest{}, err
	}
	mf, err := h.w.meta.readManifest(h.binding.Head)
	if err != nil {
		return manifest{}, h.fail(backend.NotFound, op, "the head's manifest is gone: %v", err)
	}
	if mf.State == backend.StateDestroyed {
		return manifest{}, h.fail(backend.Destroyed, op, "head was destroyed")
	}
	h.mu.Lock()
	h.mf.State = mf.State
	out := h.mf
	h.mu.Unlock()
	return out, nil
}

// git runs a command in the head's directory, with grove's own exclude
// file so that its temporary files are never captured.
func (h *head) git(ctx context.Context, c gitcmd.Cmd) (string, error) {
	c.Dir = h.mf.Dir
	c.Args = append([]string{"-c", "core.excludesFile=" + h.w.meta.excludeFile()}, c.Args...)
	return h.w.repo.r.Output(ctx, c)
}

// Files grove keeps in a worktree's git dir.
const (
	privateIndex = "grove-index" // the checkpoint's private index
	indexLock    = "index.lock"  // git's lock on the head's index
)

// lock takes the head's cross-process lock and recovers what a holder
// killed mid-operation left: git's index.lock from a git command grove ran
// (grove records such operations in an .op marker) or from grove's own
// index swap (a hard link of its private index), and the private index.
func (h *head) lock(ctx context.Context, mf manifest, purpose string) (*lock.Lock, error) {
	l, err := lock.Acquire(ctx, h.w.meta.headLock(mf.ID), purpose)
	if err != nil {
		return nil, err
	}
	if mf.Attached {
		return l, nil // grove never writes an attached checkout's index
	}
	lockPath := filepath.Join(mf.Admin, indexLock)
	priv := filepath.Join(mf.Admin, privateIndex)
	if _, err := os.Stat(h.w.meta.opMarker(mf.ID)); err == nil {
		_ = os.Remove(lockPath)
		_ = os.Remove(h.w.meta.opMarker(mf.ID))
	} else if a, err := os.Lstat(lockPath); err == nil {
		if b, err := os.Lstat(priv); err == nil && os.SameFile(a, b) {
			_ = os.Remove(lockPath)
		}
	}
	_ = os.Remove(priv)
	_ = os.Remove(priv + ".lock")
	return l, nil
}

// mark records that an operation writing the head's index through git is
// running; done removes the record.
func (h *head) mark(mf manifest, op string) (done func(), err error) {
	if mf.Attached {
		return func() {}, nil
	}
	p := h.w.meta.opMarker(mf.ID)
	if err := os.WriteFile(p, []byte(op+" "+strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(p) }, nil
}

// headState is what a head's git dir says now.
type headState struct {
	commit string            // HEAD's commit
	tree   string            // its tree
	onOwn  bool              // HEAD is the head's own branch (a grove-owned head)
	op     backend.Operation // a merge-like operation in progress
}

// state reads the head's HEAD and any operation in progress.
func (h *head) state(ctx context.Context, mf manifest, op string) (headState, error) {
	var st headState
	out, err := h.git(ctx, gitcmd.Cmd{Args: []string{"rev-parse", "-q", "HEAD^{commit}", "HEAD^{tree}"}})
	if err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return st, err
		}
		if _, serr := os.Stat(mf.Dir); serr != nil {
			return st, &backend.Error{Code: backend.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Reason: backend.ReasonMissing, Err: serr}
		}
		return st, &backend.Error{Code: backend.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Reason: backend.ReasonBranch,
			Err: fmt.Errorf("the head's HEAD does not resolve (branch %q gone?)", mf.Branch)}
	}
	st.commit, st.tree, _ = strings.Cut(out, "\n")
	st.op = inProgress(mf.Admin)
	if !mf.Attached && st.op == backend.OpNone {
		data, err := os.ReadFile(filepath.Join(mf.Admin, "HEAD"))
		st.onOwn = err == nil && strings.TrimSpace(string(data)) == "ref: refs/heads/"+mf.Branch
	}
	return st, nil
}

// inProgress names the merge-like operation whose state files are in a
// worktree's git dir.
func inProgress(admin string) backend.Operation {
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(admin, name)); return err == nil }
	switch {
	case exists("rebase-merge"), exists("rebase-apply/rebasing"):
		return backend.OpRebase
	case exists("rebase-apply"):
		return backend.OpApplyMailbox
	case exists("MERGE_HEAD"):
		return backend.OpMerge
	case exists("CHERRY_PICK_HEAD"), exists("sequencer/todo"):
		return backend.OpCherryPick
	case exists("REVERT_HEAD"):
		return backend.OpRevert
	case exists("BISECT_LOG"):
		return backend.OpBisect
	}
	return backend.OpNone
}

// seedIndex copies the head's index to a private index in its git dir, so
// that git's stat cache stays warm.
func (h *head) seedIndex(mf manifest, name string) (string, error) {
	priv := filepath.Join(mf.Admin, name)
	_ = os.Remove(priv)
	return priv, copyIndex(filepath.Join(mf.Admin, "index"), priv)
}

// copyIndex copies an index file keeping its modification time: git
// trusts an entry's cached stat data only if the file changed before the
// index was written, so a copy stamped "now" would hide a same-size edit
// made in the second the index was written ("racy git").
func copyIndex(src, dst string) error {
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // git starts an empty index
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, data, 0o644)
	}
	if err == nil {
		err = os.Chtimes(dst, st.ModTime(), st.ModTime())
	}
	return err
}

// indexSwap is the head's index.lock taken with the private index as its
// content: git's own lock protocol, so a concurrent git command sees the
// old index or the new one, never a mix.
type indexSwap struct {
	priv, lockPath, index string
}

// lockIndex takes the head's index.lock by hard-linking the private index
// as it, waiting while a git command holds the lock until ctx ends. A lock
// grove's swap leaves behind is recognizable: it is the private index's
// inode.
func (h *head) lockIndex(ctx context.Context, mf manifest, priv string) (*indexSwap, error) {
	s := &indexSwap{priv: priv, lockPath: filepath.Join(mf.Admin, indexLock), index: filepath.Join(mf.Admin, "index")}
	delay := time.Millisecond
	for {
		err := os.Link(priv, s.lockPath)
		if err == nil {
			crashPoint("index:locked")
			return s, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// index.lock is held by a git command: wait for it.
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &backend.Error{Code: backend.Canceled, Op: "gitbackend: index lock", Head: mf.Name,
				Err: fmt.Errorf("waiting for %s, held by a git command: %w", s.lockPath, ctx.Err())}
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// commit renames the lock over the index, releasing it.
func (s *indexSwap) commit() error {
	if err := os.Rename(s.lockPath, s.index); err != nil {
		_ = os.Remove(s.lockPath)
		return err
	}
	return os.Remove(s.priv)
}

// abort releases the lock, leaving the index as it was.
func (s *indexSwap) abort() { _ = os.Remove(s.lockPath) }

// swapIndex makes the private index the head's index.
func (h *head) swapIndex(ctx context.Context, mf manifest, priv string) error {
	s, err := h.lockIndex(ctx, mf, priv)
	if err != nil {
		return err
	}
	return s.commit()
}

// capture stages the head's whole state into the private index priv:
// tracked and untracked files, minus new files over the cap, plus the
// included ignored paths. It returns what it skipped.
func (h *head) capture(ctx context.Context, mf manifest, priv string, opts *backend.CheckpointOptions) ([]backend.Skipped, error) {
	capSize := opts.MaxNewFileSize
	if capSize == 0 {
		capSize = backend.DefaultMaxNewFileSize
	}
	env := []string{"GIT_INDEX_FILE=" + priv}
	out, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"ls-files", "-z", "-o", "--exclude-standard", "--directory"}})
	if err != nil {
		return nil, err
	}
	var skipped []backend.Skipped
	var big, walked []string
	sizes := map[string]int64{}
	for _, name := range strings.Split(out, "\x00") {
		if name == "" {
			continue
		}
		if dir, ok := strings.CutSuffix(name, "/"); ok {
			s, b, err := walkUntracked(mf.Dir, dir, capSize, sizes)
			if err != nil {
				return nil, err
			}
			skipped = append(skipped, s...)
			walked = append(walked, b...)
			continue
		}
		if capSize < 0 {
			continue
		}
		if st, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(name))); err == nil && st.Mode().IsRegular() && st.Size() > capSize {
			big = append(big, name)
			sizes[name] = st.Size()
		}
	}
	if len(walked) > 0 {
		// Files found by walking an untracked directory may be ignored;
		// only the ones git would capture count as skipped.
		ignored, err := h.git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(walked, "\x00") + "\x00"),
			Args: []string{"check-ignore", "-z", "--stdin"}})
		if err != nil && gitcmd.ExitCode(err) != 1 {
			return nil, err
		}
		ign := map[string]bool{}
		for _, p := range strings.Split(ignored, "\x00") {
			ign[p] = true
		}
		for _, p := range walked {
			if !ign[p] {
				big = append(big, p)
			}
		}
	}
	specs := []string{"."}
	for _, p := range big {
		skipped = append(skipped, backend.Skipped{Path: p, Reason: backend.SkipTooLarge, Size: sizes[p]})
		specs = append(specs, ":(exclude,literal)"+p)
	}
	if _, err := h.git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(specs, "\x00") + "\x00"),
		Args: []string{"add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"}}); err != nil {
		return nil, err
	}
	var include []string
	for _, p := range opts.Include {
		if backend.CheckPath("include", p) != nil {
			return nil, h.fail(backend.InvalidArgument, "checkpoint", "include path %q is not a valid name", p)
		}
		if _, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(p))); err == nil {
			include = append(include, ":(literal)"+p)
		}
	}
	if len(include) > 0 {
		if _, err := h.git(ctx, gitcmd.Cmd{Env: env, Stdin: strings.NewReader(strings.Join(include, "\x00") + "\x00"),
			Args: []string{"add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"}}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(skipped, func(a, b backend.Skipped) int { return strings.Compare(a.Path, b.Path) })
	return skipped, nil
}

// walkUntracked walks a directory git reported as wholly untracked. It
// lists the empty directories and irregular files in it as skipped, and
// returns the files over the cap (which may still be ignored).
func walkUntracked(root, dir string, capSize int64, sizes map[string]int64) ([]backend.Skipped, []string, error) {
	var skipped []backend.Skipped
	var big []string
	var walk func(rel string) error
	walk = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil // vanished meanwhile: nothing to report
		}
		if len(ents) == 0 {
			skipped = append(skipped, backend.Skipped{Path: rel, Reason: backend.SkipEmptyDirectory})
			return nil
		}
		for _, e := range ents {
			if e.Name() == ".git" {
				return nil // a nested repository: git adds it as a whole
			}
		}
		for _, e := range ents {
			p := rel + "/" + e.Name()
			switch t := e.Type(); {
			case t.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case t.IsRegular():
				if capSize >= 0 {
					if info, err := e.Info(); err == nil && info.Size() > capSize {
						big = append(big, p)
						sizes[p] = info.Size()
					}
				}
			case t&fs.ModeSymlink != 0:
			default:
				skipped = append(skipped, backend.Skipped{Path: p, Reason: backend.SkipIrregular})
			}
		}
		return nil
	}
	err := walk(dir)
	return skipped, big, err
}

func (h *head) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (backend.CheckpointResult, error) {
	const op = "checkpoint"
	mf, err := h.enter(ctx, "Checkpoint")
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	defer l.Unlock()
	res, err := h.checkpoint(ctx, mf, opts)
	return res, h.wrap(op, err)
}

// checkpoint commits the head's state; callers hold the head lock.
func (h *head) checkpoint(ctx context.Context, mf manifest, opts *backend.CheckpointOptions) (backend.CheckpointResult, error) {
	const op = "checkpoint"
	st, err := h.state(ctx, mf, op)
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	priv, err := h.seedIndex(mf, privateIndex)
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	defer os.Remove(priv)
	skipped, err := h.capture(ctx, mf, priv, opts)
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	crashPoint("checkpoint:captured")
	tree, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"write-tree"}})
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	// The current checkpoint: HEAD for a head on its own branch; for an
	// attached head, or one with an operation in progress, the newest
	// private checkpoint made on top of HEAD, else HEAD.
	current, currentTree := st.commit, st.tree
	var last []checkpointRef
	if !st.onOwn {
		if last, err = h.w.repo.checkpoints(ctx, mf.ID, 1); err != nil {
			return backend.CheckpointResult{}, err
		}
		if len(last) == 1 && string(last[0].Parent) == st.commit {
			current = string(last[0].ID)
			if currentTree, err = h.w.repo.git(ctx, "rev-parse", current+"^{tree}"); err != nil {
				return backend.CheckpointResult{}, err
			}
		}
	}
	if tree == currentTree {
		if st.onOwn {
			// Nothing to commit, but the refreshed index keeps git's
			// stat cache warm and heals an index a crash left stale.
			if err := h.swapIndex(ctx, mf, priv); err != nil {
				return backend.CheckpointResult{}, err
			}
		}
		cp, err := h.w.repo.commitInfo(ctx, current)
		if err != nil {
			return backend.CheckpointResult{}, err
		}
		return backend.CheckpointResult{Checkpoint: cp, Skipped: skipped}, nil
	}
	msg := opts.Message
	if msg == "" {
		msg = "grove checkpoint"
	}
	author := opts.Author
	if author == (backend.Signature{}) {
		author = backend.DefaultAuthor
	}
	now := time.Now().Truncate(time.Second)
	date := strconv.FormatInt(now.Unix(), 10) + " +0000"
	commit, err := h.git(ctx, gitcmd.Cmd{
		Author: &gitcmd.Identity{Name: author.Name, Email: author.Email},
		Env:    []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date},
		Stdin:  strings.NewReader(msg),
		Args:   []string{"commit-tree", tree, "-p", st.commit},
	})
	if err != nil {
		return backend.CheckpointResult{}, err
	}
	crashPoint("checkpoint:committed")
	// For a head on its own branch, take the index lock before any ref
	// moves: a checkpoint that gives up waiting for a git command records
	// nothing.
	var swap *indexSwap
	if st.onOwn {
		if swap, err = h.lockIndex(ctx, mf, priv); err != nil {
			return backend.CheckpointResult{}, err
		}
	}
	if err := h.recordCheckpoint(ctx, mf, st, commit); err != nil {
		if swap != nil {
			swap.abort()
		}
		return backend.CheckpointResult{}, err
	}
	crashPoint("checkpoint:recorded")
	if swap != nil {
		if err := swap.commit(); err != nil {
			return backend.CheckpointResult{}, err
		}
	}
	return backend.CheckpointResult{
		Checkpoint: backend.Checkpoint{
			ID: backend.CheckpointID(commit), Parent: backend.CheckpointID(st.commit),
			Message: strings.TrimRight(msg, "\n"), Author: author, Time: now,
		},
		New:     true,
		Skipped: skipped,
	}, nil
}

// gcEvery is how many checkpoints of one head pass between git gc --auto
// runs (plumbing never triggers git's automatic collection itself).
const gcEvery = 50

// recordCheckpoint points a new private ref at commit and, for a head on
// its own branch, advances the branch from its old commit, in one ref
// transaction under the repository lock.
func (h *head) recordCheckpoint(ctx context.Context, mf manifest, st headState, commit string) error {
	last, err := h.w.repo.checkpoints(ctx, mf.ID, 1)
	if err != nil {
		return err
	}
	seq := 1
	if len(last) == 1 {
		seq = last[0].seq + 1
	}
	var tx strings.Builder
	tx.WriteString("start\n")
	if st.onOwn {
		fmt.Fprintf(&tx, "update refs/heads/%s %s %s\n", mf.Branch, commit, st.commit)
	}
	fmt.Fprintf(&tx, "create %s %s\nprepare\ncommit\n", refName(mf.ID, seq), commit)
	rl, err := h.w.lockRepo(ctx, "checkpoint "+mf.Name)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if _, err := h.w.repo.run(ctx, gitcmd.Cmd{Stdin: strings.NewReader(tx.String()), Args: []string{"update-ref", "--stdin"}}); err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return err
		}
		if msg := gitcmd.Stderr(err); strings.Contains(msg, "but expected") || strings.Contains(msg, "already exists") ||
			strings.Contains(msg, "cannot lock ref") {
			return &backend.Error{Code: backend.Conflict, Op: "gitbackend: checkpoint", Head: mf.Name,
				Err: fmt.Errorf("the branch moved during the checkpoint (a git command outside grove?): %w", err)}
		}
		return err
	}
	if seq%gcEvery == 0 {
		// Best effort: a failed collection does not fail the checkpoint.
		_, _ = h.w.repo.git(ctx, "gc", "--auto", "--quiet")
	}
	return nil
}

func (h *head) Restore(ctx context.Context, to backend.Rev, opts *backend.RestoreOptions) (backend.RestoreResult, error) {
	const op = "restore"
	mf, err := h.enter(ctx, "Restore")
	if err != nil {
		return backend.RestoreResult{}, err
	}
	if to == "" {
		return backend.RestoreResult{}, h.fail(backend.InvalidArgument, op, "empty revision")
	}
	target, err := h.w.repo.resolve(ctx, op, to)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	defer l.Unlock()
	err = h.restore(ctx, mf, target)
	if err != nil {
		return backend.RestoreResult{}, h.wrap(op, err)
	}
	return backend.RestoreResult{Commit: backend.CheckpointID(target)}, nil
}

// restore makes the head's files equal target's; callers hold the head
// lock. Order: refuse ignored-file collisions; write target's content
// where tracked files would be dropped (so nothing is removed first); make
// the tracked files equal target's; remove untracked, unignored files; for
// a grove-owned head, reset its branch and swap the index in.
func (h *head) restore(ctx context.Context, mf manifest, target string) error {
	const op = "restore"
	st, err := h.state(ctx, mf, op)
	if err != nil {
		return err
	}
	if !mf.Attached && (st.op == backend.OpRebase || st.op == backend.OpApplyMailbox || st.op == backend.OpBisect) {
		return h.fail(backend.FailedPrecondition, op, "a %s is in progress in the head; finish or abort it first", st.op)
	}
	priv, err := h.seedIndex(mf, privateIndex)
	if err != nil {
		return err
	}
	defer os.Remove(priv)
	env := []string{"GIT_INDEX_FILE=" + priv}
	// What target adds to the index (D: in target, not in the index) and
	// drops from it (A: in the index, not in target).
	out, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"diff-index", "--cached", "--name-status", "--no-renames", "-z", target, "--"}})
	if err != nil {
		return err
	}
	var adds []string
	drops := false
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		switch fields[i] {
		case "D":
			adds = append(adds, fields[i+1])
		case "A":
			drops = true
		}
	}
	if err := h.checkIgnoredCollisions(ctx, mf, priv, target, adds); err != nil {
		return err
	}
	done, err := h.mark(mf, op)
	if err != nil {
		return err
	}
	defer done()
	if drops {
		// read-tree -u removes the files it drops before it writes new
		// ones: write target's content first.
		if _, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"checkout", "-f", target, "--", ":/"}}); err != nil {
			return err
		}
	}
	crashPoint("restore:written")
	if _, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"read-tree", "--reset", "-u", target}}); err != nil {
		return err
	}
	crashPoint("restore:pruned")
	if _, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"clean", "-f", "-d", "-q"}}); err != nil {
		return err
	}
	crashPoint("restore:cleaned")
	if mf.Attached {
		return nil
	}
	rl, err := h.w.lockRepo(ctx, "restore "+mf.Name)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	if !st.onOwn {
		if _, err := h.git(ctx, gitcmd.Cmd{Args: []string{"symbolic-ref", "HEAD", "refs/heads/" + mf.Branch}}); err != nil {
			return err
		}
	}
	if _, err := h.w.repo.git(ctx, "update-ref", "-m", "grove: restore", "refs/heads/"+mf.Branch, target); err != nil {
		return err
	}
	for _, f := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD"} {
		_ = os.Remove(filepath.Join(mf.Admin, f))
	}
	return h.swapIndex(ctx, mf, priv)
}

// checkIgnoredCollisions refuses with Conflict where target adds a path
// that is an ignored file in the head now with other content, or whose
// parent directory is an ignored file there. Only the paths target adds to
// the index are looked at, never the whole tree.
func (h *head) checkIgnoredCollisions(ctx context.Context, mf manifest, priv, target string, adds []string) error {
	var present, blockers []string
	for _, p := range adds {
		_, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(p)))
		switch {
		case err == nil:
			present = append(present, p)
		case errors.Is(err, syscall.ENOTDIR):
			for d := path.Dir(p); d != "."; d = path.Dir(d) {
				if fi, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(d))); err == nil && !fi.IsDir() {
					blockers = append(blockers, d)
					break
				}
			}
		}
	}
	if len(present) == 0 && len(blockers) == 0 {
		return nil
	}
	ignored := func(paths []string) (map[string]bool, error) {
		out, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Stdin: strings.NewReader(strings.Join(paths, "\x00") + "\x00"),
			Args: []string{"check-ignore", "-z", "--stdin"}})
		if err != nil && gitcmd.ExitCode(err) != 1 {
			return nil, err
		}
		set := map[string]bool{}
		for _, p := range strings.Split(out, "\x00") {
			set[p] = p != ""
		}
		return set, nil
	}
	conflict := func(p string) error {
		return &backend.Error{Code: backend.Conflict, Op: "gitbackend: restore", Head: mf.Name, Path: p,
			Err: fmt.Errorf("the target tracks %s, where the head has an ignored file with other content; move it away or include it in a checkpoint", p)}
	}
	if len(blockers) > 0 {
		ign, err := ignored(blockers)
		if err != nil {
			return err
		}
		for _, b := range blockers {
			if ign[b] {
				return conflict(b)
			}
		}
	}
	if len(present) == 0 {
		return nil
	}
	ign, err := ignored(present)
	if err != nil {
		return err
	}
	present = slices.DeleteFunc(present, func(p string) bool { return !ign[p] })
	if len(present) == 0 {
		return nil
	}
	listing, err := h.w.repo.git(ctx, append([]string{"ls-tree", "-z", "--full-tree", target, "--"}, present...)...)
	if err != nil {
		return err
	}
	want := map[string]string{}
	for _, rec := range strings.Split(listing, "\x00") {
		if meta, p, ok := strings.Cut(rec, "\t"); ok {
			if f := strings.Fields(meta); len(f) == 3 {
				want[p] = f[2]
			}
		}
	}
	hashes, err := h.git(ctx, gitcmd.Cmd{Stdin: strings.NewReader(strings.Join(present, "\n") + "\n"),
		Args: []string{"hash-object", "--no-filters", "--stdin-paths"}})
	if err != nil {
		return err
	}
	for i, got := range strings.Split(hashes, "\n") {
		if i < len(present) && got != want[present[i]] {
			return conflict(present[i])
		}
	}
	return nil
}

func (h *head) Log(ctx context.Context, opts *backend.LogOptions) ([]backend.Checkpoint, error) {
	mf, err := h.enter(ctx, "Log")
	if err != nil {
		return nil, err
	}
	refs, err := h.w.repo.checkpoints(ctx, mf.ID, opts.Limit)
	if err != nil {
		return nil, h.wrap("log", err)
	}
	out := make([]backend.Checkpoint, len(refs))
	for i, r := range refs {
		out[i] = r.Checkpoint
	}
	return out, nil
}

func (h *head) Commits(ctx context.Context, since backend.Rev) ([]backend.CheckpointID, error) {
	const op = "commits"
	mf, err := h.enter(ctx, "Commits")
	if err != nil {
		return nil, err
	}
	base, err := h.w.repo.resolve(ctx, op, since)
	if err != nil {
		return nil, err
	}
	tip := "HEAD"
	if !mf.Attached {
		tip = "refs/heads/" + mf.Branch
	}
	out, err := h.git(ctx, gitcmd.Cmd{Args: []string{"rev-list", tip, "^" + base, "--"}})
	if err != nil {
		return nil, h.wrap(op, err)
	}
	var ids []backend.CheckpointID
	for _, l := range strings.Fields(out) {
		ids = append(ids, backend.CheckpointID(l))
	}
	return ids, nil
}

// Status runs git status with optional locks off, so that polling never
// blocks a concurrent git command. Dirty counts every change git reports
// except new files over the default size cap, which a checkpoint would
// skip.
func (h *head) Status(ctx context.Context) (backend.Status, error) {
	const op = "status"
	mf, err := h.enter(ctx, "Status")
	if err != nil {
		return backend.Status{}, err
	}
	out, err := h.git(ctx, gitcmd.Cmd{NoOptionalLocks: true,
		Args: []string{"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames"}})
	if err != nil {
		if _, serr := os.Stat(mf.Dir); serr != nil {
			return backend.Status{}, &backend.Error{Code: backend.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Reason: backend.ReasonMissing, Err: serr}
		}
		return backend.Status{}, h.wrap(op, err)
	}
	st := backend.Status{InProgress: inProgress(mf.Admin), Archived: mf.State == backend.StateArchived}
	for _, rec := range strings.Split(out, "\x00") {
		switch {
		case strings.HasPrefix(rec, "# branch.oid "):
			st.Commit = backend.CheckpointID(strings.TrimPrefix(rec, "# branch.oid "))
		case strings.HasPrefix(rec, "1 "):
			f := strings.SplitN(rec, " ", 9)
			if len(f) != 9 {
				continue
			}
			kind := backend.ChangeModified
			switch {
			case f[1][0] == 'A' && f[1][1] == 'D':
				continue // added, then deleted: nothing to capture
			case f[1][0] == 'A':
				kind = backend.ChangeAdded
			case f[1][0] == 'D' || f[1][1] == 'D':
				kind = backend.ChangeDeleted
			}
			st.Changes = append(st.Changes, backend.Change{Path: f[8], Kind: kind})
			st.Dirty = true
		case strings.HasPrefix(rec, "u "):
			f := strings.SplitN(rec, " ", 11)
			if len(f) == 11 {
				st.Conflicts = append(st.Conflicts, f[10])
				st.Changes = append(st.Changes, backend.Change{Path: f[10], Kind: backend.ChangeModified})
				st.Dirty = true
			}
		case strings.HasPrefix(rec, "? "):
			p := strings.TrimPrefix(rec, "? ")
			st.Changes = append(st.Changes, backend.Change{Path: p, Kind: backend.ChangeUntracked})
			if fi, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(p))); err != nil || fi.Size() <= backend.DefaultMaxNewFileSize || !fi.Mode().IsRegular() {
				st.Dirty = true
			}
		}
	}
	if st.Commit == "(initial)" {
		st.Commit = ""
	}
	slices.SortFunc(st.Changes, func(a, b backend.Change) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(st.Conflicts)
	last, err := h.w.repo.checkpoints(ctx, mf.ID, 1)
	if err != nil {
		return backend.Status{}, h.wrap(op, err)
	}
	if len(last) == 1 {
		st.LastCheckpoint = last[0].ID
	}
	return st, nil
}

// Diff runs git diff without external diff drivers or text conversion. To
// the live working tree, the head's state is first staged into a
// throwaway index (as a checkpoint would capture it, untracked files
// included), so the diff shows what a checkpoint now would record.
func (h *head) Diff(ctx context.Context, from, to backend.Rev) (backend.Diff, error) {
	const op = "diff"
	mf, err := h.enter(ctx, "Diff")
	if err != nil {
		return backend.Diff{}, err
	}
	a, err := h.w.repo.resolve(ctx, op, from)
	if err != nil {
		return backend.Diff{}, err
	}
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-color", a}
	var env []string
	if to == backend.Live {
		f, err := os.CreateTemp(mf.Admin, "grove-diff-index-*")
		if err != nil {
			return backend.Diff{}, h.wrap(op, err)
		}
		_ = f.Close()
		tmp := f.Name()
		defer os.Remove(tmp)
		err = os.Remove(tmp)
		if err == nil {
			err = copyIndex(filepath.Join(mf.Admin, "index"), tmp)
		}
		if err == nil {
			_, err = h.capture(ctx, mf, tmp, &backend.CheckpointOptions{})
		}
		if err != nil {
			return backend.Diff{}, h.wrap(op, err)
		}
		defer os.Remove(tmp + ".lock")
		env = []string{"GIT_INDEX_FILE=" + tmp}
		args = append(args, "--cached")
	} else {
		b, err := h.w.repo.resolve(ctx, op, to)
		if err != nil {
			return backend.Diff{}, err
		}
		args = append(args, b)
	}
	patch, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append(slices.Clone(args), "-p", "--")})
	if err != nil {
		return backend.Diff{}, h.wrap(op, err)
	}
	stats, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append(slices.Clone(args), "--numstat", "-z", "--")})
	if err != nil {
		return backend.Diff{}, h.wrap(op, err)
	}
	d := backend.Diff{Patch: patch}
	if d.Patch != "" {
		d.Patch += "\n"
	}
	for _, rec := range strings.Split(stats, "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			continue
		}
		added, _ := strconv.Atoi(f[0]) // "-" for binary files: 0
		deleted, _ := strconv.Atoi(f[1])
		d.Files = append(d.Files, backend.FileStat{Path: f[2], Added: added, Deleted: deleted})
	}
	slices.SortFunc(d.Files, func(a, b backend.FileStat) int { return strings.Compare(a.Path, b.Path) })
	return d, nil
}

func (h *head) SetArchived(ctx context.Context, archived bool) error {
	if _, err := h.enter(ctx, "SetArchived"); err != nil {
		return err
	}
	if err := h.w.setState(ctx, h.binding.Head, archived); err != nil {
		return err
	}
	h.mu.Lock()
	h.mf.State = backend.StateActive
	if archived {
		h.mf.State = backend.StateArchived
	}
	h.mu.Unlock()
	return nil
}

// Destroy removes a grove-owned head's worktree (directory and
// registration) with git worktree remove, keeps its branch and checkpoint
// refs, and turns its manifest into a tombstone. An attached head is only
// forgotten.
func (h *head) Destroy(ctx context.Context, opts *backend.DestroyOptions) (backend.DestroyResult, error) {
	const op = "destroy"
	mf, err := h.enter(ctx, "Destroy")
	if err != nil {
		return backend.DestroyResult{}, err
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return backend.DestroyResult{}, err
	}
	defer l.Unlock()
	rl, err := h.w.lockRepo(ctx, "destroy "+mf.Name)
	if err != nil {
		return backend.DestroyResult{}, err
	}
	defer rl.Unlock()
	if !mf.Attached {
		if err := h.removeWorktree(ctx, mf); err != nil {
			return backend.DestroyResult{}, h.wrap(op, err)
		}
	}
	tomb, err := h.w.meta.readManifest(mf.ID)
	if err != nil {
		tomb = &mf
	}
	tomb.State = backend.StateDestroyed
	if err := h.w.meta.writeManifest(tomb); err != nil {
		return backend.DestroyResult{}, h.wrap(op, err)
	}
	h.mu.Lock()
	h.mf.State = backend.StateDestroyed
	h.mu.Unlock()
	_ = h.Close()
	_ = os.Remove(h.w.meta.bindLock(mf.ID))
	return backend.DestroyResult{}, nil
}

// removeWorktree removes the head's directory and registration; callers
// hold the head and repository locks.
func (h *head) removeWorktree(ctx context.Context, mf manifest) error {
	if _, err := os.Lstat(filepath.Join(mf.Dir, ".git")); err == nil {
		if _, err := h.w.repo.git(ctx, "worktree", "remove", "--force", "--force", mf.Dir); err != nil {
			if backend.CodeOf(err) == backend.Canceled {
				return err
			}
			if admin, aerr := readGitFile(mf.Dir); aerr != nil || admin != mf.Admin {
				return fmt.Errorf("git worktree remove: %w", err)
			}
			if err := os.RemoveAll(mf.Dir); err != nil {
				return err
			}
		}
	}
	if _, err := os.Stat(mf.Dir); err == nil {
		// Only what grove made, or nothing at all, may be left.
		if ents, err := os.ReadDir(mf.Dir); err == nil && len(ents) == 0 {
			_ = os.Remove(mf.Dir)
		}
	}
	_, err := h.w.repo.git(ctx, "worktree", "prune")
	return err
}

func (h *head) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return &backend.Error{Code: backend.FailedPrecondition, Op: "gitbackend: close head", Head: h.mf.Name, Err: errors.New("head is already closed")}
	}
	h.closed = true
	h.fs.close()
	if h.bind != nil {
		err := h.bind.Unlock()
		h.bind = nil
		return err
	}
	return nil
}
