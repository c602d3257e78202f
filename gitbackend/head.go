package gitbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/rootfs"
)

// head is one handle on a head. An isolated handle holds the head's
// isolation lock until Close or Destroy.
type head struct {
	w       *workspace
	binding grove.Binding
	fs      *rootfs.FS

	mu       sync.Mutex
	mf       registry.Manifest
	bind     *lock.Lock
	closed   bool
	gitlinks gitlinkCache       // see submoduleChanges
	lfsSeen  map[string]lfsSeen // see holdsContent
	watch    *watchState        // nil: not watched (see watched.go)
}

// gitlinkCache is what Status last read of a head's index's marks, by
// the index file's identity (regfile.FileKey): an index that did not
// change is not read again.
type gitlinkCache struct {
	key        string
	gitlinks   []string // less those outside a sparse head's set
	attributes []gitfmt.Entry
}

var _ backend.Head = (*head)(nil)

func (w *workspace) newHead(mf *registry.Manifest, bl *lock.Lock) (*head, error) {
	fsys, err := rootfs.Open(mf.Dir, rootfs.Options{Op: "gitbackend", Key: string(mf.ID), CASLock: w.meta.CASLock(mf.ID)})
	if err != nil {
		if bl != nil {
			_ = bl.Unlock()
		}
		return nil, &grove.Error{Code: grove.NotFound, Op: "gitbackend: open head", Head: mf.Name, Reason: grove.ReasonMissing, Err: err}
	}
	if !mf.Attached {
		// Best effort: without the record, a grove command run in the head
		// checks the head's .git as locate.CheckLocator says.
		_ = w.b.anchors().SetHead(mf.Dir, w.repo.Common)
	}
	p, _ := json.Marshal(payload{Repo: w.repo.Common, Dir: mf.Dir, Name: mf.Name, Branch: mf.Branch, Clone: mf.Clone})
	var watch *watchState
	if w.watchChanges {
		watch = &watchState{}
	}
	return &head{
		w: w, fs: fsys, mf: *mf, bind: bl, watch: watch,
		binding: grove.Binding{
			Version: grove.BindingVersion, Backend: BackendID, Workspace: w.id,
			Head: mf.ID, Access: mf.Access, Payload: p,
		},
	}, nil
}

func (h *head) manifest() registry.Manifest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mf
}

func (h *head) Info() grove.HeadInfo {
	mf := h.manifest()
	return mf.Info()
}

func (h *head) Binding() grove.Binding {
	b := h.binding
	b.Payload = slices.Clone(b.Payload)
	return b
}

func (h *head) FS() grove.FS { return h.fs }

func (h *head) fail(code grove.Code, op string, format string, args ...any) error {
	return &grove.Error{Code: code, Op: "gitbackend: " + op, Head: h.mf.Name, Err: fmt.Errorf(format, args...)}
}

// wrap gives a git failure the head's operation, keeping Canceled.
func (h *head) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var be *grove.Error
	if errors.As(err, &be) && be.Code != grove.Internal {
		return err
	}
	return &grove.Error{Code: grove.Internal, Op: "gitbackend: " + op, Head: h.mf.Name, Err: err}
}

// enter runs the checks every call starts with: the handle and the backend
// are open (a head outlives its workspace's Close), the context is live,
// and the head was not destroyed meanwhile by another handle or process.
func (h *head) enter(ctx context.Context, op string) (registry.Manifest, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return registry.Manifest{}, h.fail(grove.FailedPrecondition, op, "head is closed")
	}
	if _, err := h.w.b.enter(ctx, op); err != nil {
		return registry.Manifest{}, err
	}
	mf, err := h.w.meta.ReadManifest(h.binding.Head)
	if err != nil {
		return registry.Manifest{}, h.fail(grove.NotFound, op, "the head's manifest is gone: %v", err)
	}
	if mf.State == grove.StateDestroyed {
		return registry.Manifest{}, h.fail(grove.Destroyed, op, "head was destroyed")
	}
	h.mu.Lock()
	h.mf.State = mf.State
	out := h.mf
	h.mu.Unlock()
	return out, nil
}

// enterTree is enter for the operations that run git on the head's files:
// before any of them, the head's directory, its .git file and its git dir
// must still point at each other as grove recorded (an agent can rewrite
// the .git file, or swap the directory for a symlink). A head that fails
// is NotFound (missing, moved, unregistered) or IdentityMismatch, as
// Reopen would answer, and nothing runs.
func (h *head) enterTree(ctx context.Context, op string) (registry.Manifest, error) {
	mf, err := h.enter(ctx, op)
	if err != nil {
		return mf, err
	}
	fail := func(code grove.Code, reason grove.Reason, format string, args ...any) error {
		return &grove.Error{Code: code, Op: "gitbackend: " + op, Head: mf.Name, Reason: reason, Err: fmt.Errorf(format, args...)}
	}
	return mf, h.w.verify(&mf, fail)
}

// git runs a command on the head: its git dir and working tree are the
// ones grove recorded, never what git would discover from the head's
// files (and, as for every command grove runs, no excludes file named in
// configuration is read). c.GitDir, when set, is a scratch git dir of grove's used in
// place of the head's (see resetFiles).
func (h *head) git(ctx context.Context, c gitcmd.Cmd) (string, error) {
	h.mu.Lock()
	if c.GitDir == "" {
		c.GitDir = h.mf.Admin
	}
	c.WorkTree, c.Dir = h.mf.Dir, h.mf.Dir
	c.CommonDir = h.w.repo.Common
	h.mu.Unlock()
	return h.w.repo.Runner.Output(ctx, c)
}

// sparseStatusIndex is the index a Status of sparse head mf reads, with
// the blockers a checkpoint would skip: "" (the head's own, read as any
// head's) when it already has the marks a checkpoint would give it, the
// usual case; otherwise a copy in its git dir with those marks (see
// markSparse), which cleanup removes. The head's index is read and walked
// once; a head whose index cannot be read gets one read from HEAD.
func (h *head) sparseStatusIndex(ctx context.Context, mf registry.Manifest) (index string, blockers []string, cleanup func(), err error) {
	data, rerr := h.w.repo.Index.ReadIndex(filepath.Join(mf.Admin, "index"))
	defer h.w.repo.Index.Put(data)
	var m sparseMarks
	if rerr == nil {
		if m, rerr = sparseWalk(data, mf.Dir, mf.Sparse, false); rerr == nil &&
			len(m.unmark) == 0 && len(m.mark) == 0 && len(m.unsure) == 0 && len(m.blockers) == 0 {
			return "", nil, func() {}, nil
		}
	}
	f, err := os.CreateTemp(mf.Admin, "grove-status-index-*")
	if err != nil {
		return "", nil, nil, err
	}
	tmp := f.Name()
	_ = f.Close()
	cleanup = func() { _ = os.Remove(tmp); _ = os.Remove(tmp + ".lock") }
	if rerr == nil {
		if err = os.WriteFile(tmp, data, 0o644); err == nil {
			err = applySparse(ctx, h.git, mf, tmp, &m)
		}
	} else if err = h.rebuildIndex(ctx, tmp, "HEAD"); err == nil {
		m, err = markSparse(ctx, h.git, mf, tmp, nil, false)
	}
	if err != nil {
		cleanup()
		return "", nil, nil, err
	}
	return tmp, m.blockers, cleanup, nil
}

// Files grove keeps in a worktree's git dir.
const (
	privateIndex = "grove-index" // the checkpoint's private index
	indexLock    = "index.lock"  // git's lock on the head's index
)

// lock takes the head's cross-process lock and recovers what a holder
// killed mid-operation left: git's index.lock from a git command grove ran
// (grove records such operations in an .op marker) or from grove's own
// index swap (a hard link of its private index), the private index, and
// a watched holder's spare index.
func (h *head) lock(ctx context.Context, mf registry.Manifest, purpose string) (*lock.Lock, error) {
	l, err := lock.Acquire(ctx, h.w.meta.HeadLock(mf.ID), purpose)
	if err != nil {
		return nil, err
	}
	if mf.Attached {
		return l, nil // grove never writes an attached checkout's index
	}
	lockPath := filepath.Join(mf.Admin, indexLock)
	priv := filepath.Join(mf.Admin, privateIndex)
	if _, err := os.Stat(h.w.meta.OpMarker(mf.ID)); err == nil {
		_ = os.Remove(lockPath)
		_ = os.Remove(h.w.meta.OpMarker(mf.ID))
	} else if a, err := os.Lstat(lockPath); err == nil {
		if b, err := os.Lstat(priv); err == nil && os.SameFile(a, b) {
			_ = os.Remove(lockPath)
		}
	}
	_ = os.Remove(priv)
	_ = os.Remove(priv + ".lock")
	_ = os.Remove(filepath.Join(mf.Admin, cleanIndexName))
	if !h.watch.hasSpare() {
		_ = os.Remove(filepath.Join(mf.Admin, spareIndex)) // a killed holder's
	}
	return l, nil
}

// mark records that an operation writing the head's index through git is
// running; done removes the record. The record is an empty file, its
// existence all it says: on a file system that discards what is deleted
// (this VM's), a file written and removed costs ten times an empty one
// (190 us against 19 us).
func (h *head) mark(mf registry.Manifest) (done func(), err error) {
	if mf.Attached {
		return func() {}, nil
	}
	p := h.w.meta.OpMarker(mf.ID)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(p) }, nil
}

// headState is what a head's git dir says now.
type headState struct {
	commit string          // HEAD's commit
	tree   string          // its tree
	onOwn  bool            // HEAD is the head's own branch (a grove-owned head)
	op     grove.Operation // a merge-like operation in progress
}

// state reads the head's HEAD and any operation in progress.
func (h *head) state(ctx context.Context, mf registry.Manifest, op string) (headState, error) {
	if st, ok := h.stateFast(mf); ok {
		return st, nil
	}
	var st headState
	out, err := h.git(ctx, gitcmd.Cmd{Args: []string{"rev-parse", "-q", "HEAD^{commit}", "HEAD^{tree}"}})
	if err != nil {
		if grove.CodeOf(err) != grove.Internal {
			return st, err
		}
		if _, serr := os.Stat(mf.Dir); serr != nil {
			return st, &grove.Error{Code: grove.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Reason: grove.ReasonMissing, Err: serr}
		}
		if mf.Branch == "" || !h.w.repo.RefExists("refs/heads/"+mf.Branch) {
			return st, &grove.Error{Code: grove.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Reason: grove.ReasonBranch,
				Err: fmt.Errorf("the head's HEAD does not resolve (branch %q gone?)", mf.Branch)}
		}
		return st, err // the branch is there: git failed for another reason
	}
	st.commit, st.tree, _ = strings.Cut(out, "\n")
	st.op = inProgress(mf.Admin)
	if !mf.Attached && st.op == grove.OpNone {
		data, err := regfile.Read(filepath.Join(mf.Admin, "HEAD"), registry.MaxSmallFile)
		st.onOwn = err == nil && gitfmt.GitLine(data) == "ref: refs/heads/"+mf.Branch
	}
	return st, nil
}

// stateFast is state read without a process, for a head whose HEAD is
// its branch or a commit, both readable in-process; ok is false otherwise.
func (h *head) stateFast(mf registry.Manifest) (headState, bool) {
	var st headState
	commit, ref, ok := h.w.repo.HeadCommit(mf.Admin)
	if !ok {
		return st, false
	}
	st.commit = commit
	st.onOwn = ref != "" && !mf.Attached && mf.Branch != "" && ref == "refs/heads/"+mf.Branch
	if st.tree, ok = h.w.repo.CommitTree(st.commit); !ok {
		return st, false
	}
	st.op = inProgress(mf.Admin)
	st.onOwn = st.onOwn && st.op == grove.OpNone
	return st, true
}

// inProgress names the merge-like operation whose state files are in a
// worktree's git dir.
func inProgress(admin string) grove.Operation {
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(admin, name)); return err == nil }
	switch {
	case exists("rebase-merge"), exists("rebase-apply/rebasing"):
		return grove.OpRebase
	case exists("rebase-apply"):
		return grove.OpApplyMailbox
	case exists("MERGE_HEAD"):
		return grove.OpMerge
	case exists("CHERRY_PICK_HEAD"), exists("sequencer/todo"):
		return grove.OpCherryPick
	case exists("REVERT_HEAD"):
		return grove.OpRevert
	case exists("BISECT_LOG"):
		return grove.OpBisect
	}
	return grove.OpNone
}

func (h *head) Log(ctx context.Context, opts *backend.LogOptions) ([]grove.Checkpoint, error) {
	mf, err := h.enter(ctx, "Log")
	if err != nil {
		return nil, err
	}
	refs, err := h.w.repo.Checkpoints(ctx, mf.ID, opts.Limit)
	if err != nil {
		return nil, h.wrap("log", err)
	}
	out := make([]grove.Checkpoint, len(refs))
	for i, r := range refs {
		out[i] = r.Checkpoint
	}
	return out, nil
}

func (h *head) Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error) {
	const op = "commits"
	mf, err := h.enterTree(ctx, "Commits")
	if err != nil {
		return nil, err
	}
	base, err := h.w.repo.Resolve(ctx, op, since)
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
	var ids []grove.CheckpointID
	for _, l := range strings.Fields(out) {
		ids = append(ids, grove.CheckpointID(l))
	}
	return ids, nil
}

// Status runs git status on the polled index (see polledIndex), or with
// optional locks off, so that polling never blocks a concurrent git
// command nor writes the head's index. Dirty counts every change git
// reports except new files over the default size cap, which a checkpoint
// would skip.
func (h *head) Status(ctx context.Context) (grove.Status, error) {
	mf, err := h.enterTree(ctx, "Status")
	if err != nil {
		return grove.Status{}, err
	}
	return h.statusWatched(ctx, mf, func() (grove.Status, error) { return h.status(ctx, mf) })
}

// status is Status, from git.
func (h *head) status(ctx context.Context, mf registry.Manifest) (grove.Status, error) {
	const op = "status"
	// --ignore-submodules=all: git would run git status inside every
	// gitlink's repository, reading its configuration.
	statusArgs := []string{"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"}
	cmd := gitcmd.Cmd{NoOptionalLocks: true, Args: statusArgs}
	if !mf.Attached {
		if polled, ok := gitrepo.PolledIndex(filepath.Join(mf.Admin, "index")); ok {
			// See polledIndex: git may write this file, never the
			// head's index.
			cmd = gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + polled}, Args: statusArgs}
		}
	}
	var blockers []string
	if mf.Sparse != nil {
		// What a checkpoint would take, from the index with its marks.
		tmp, b, cleanup, err := h.sparseStatusIndex(ctx, mf)
		if err != nil {
			return grove.Status{}, h.wrap(op, err)
		}
		defer cleanup()
		if blockers = b; tmp != "" {
			cmd = gitcmd.Cmd{NoOptionalLocks: true, Env: []string{"GIT_INDEX_FILE=" + tmp}, Args: statusArgs}
		}
	}
	out, err := h.git(ctx, cmd)
	if err != nil && grove.CodeOf(err) == grove.Internal && !mf.Attached {
		// The head's index may be damaged: answer from an index read from
		// HEAD instead (the next checkpoint or restore repairs the head's).
		// Status takes no lock, so concurrent polls each need their own
		// file.
		if f, terr := os.CreateTemp(mf.Admin, "grove-status-index-*"); terr == nil {
			tmp := f.Name()
			_ = f.Close()
			rerr := h.rebuildIndex(ctx, tmp, "HEAD")
			if rerr == nil {
				var m sparseMarks
				m, rerr = markSparse(ctx, h.git, mf, tmp, nil, false)
				blockers = m.blockers
			}
			if rerr == nil {
				out, err = h.git(ctx, gitcmd.Cmd{NoOptionalLocks: true, Env: []string{"GIT_INDEX_FILE=" + tmp}, Args: statusArgs})
			}
			_ = os.Remove(tmp)
			_ = os.Remove(tmp + ".lock")
		}
	}
	if err != nil {
		if _, serr := os.Stat(mf.Dir); serr != nil {
			return grove.Status{}, &grove.Error{Code: grove.NotFound, Op: "gitbackend: " + op, Head: mf.Name, Reason: grove.ReasonMissing, Err: serr}
		}
		return grove.Status{}, h.wrap(op, err)
	}
	st := grove.Status{InProgress: inProgress(mf.Admin), Archived: mf.State == grove.StateArchived}
	// Paths whose answer depends on whether they are LFS files: a file
	// modified to git whose entry is a pointer (its content may be the
	// pointer's), a new file over the cap (an LFS file is taken whatever
	// its size).
	var lfsMaybe []lfsCandidate
	records := strings.Split(out, "\x00")
	gate := lfsGate(h.w.repo.Common, mf.Dir, h.indexMarks(mf).attributes, untrackedAttributes(records))
	for _, rec := range records {
		switch {
		case strings.HasPrefix(rec, "# branch.oid "):
			st.Commit = grove.CheckpointID(strings.TrimPrefix(rec, "# branch.oid "))
		case strings.HasPrefix(rec, "1 "):
			f := strings.SplitN(rec, " ", 9)
			if len(f) != 9 {
				continue
			}
			kind := grove.ChangeModified
			switch {
			case f[1][0] == 'A' && f[1][1] == 'D':
				continue // added, then deleted: nothing to capture
			case f[1][0] == 'A':
				kind = grove.ChangeAdded
			case f[1][0] == 'D' || f[1][1] == 'D':
				kind = grove.ChangeDeleted
			case gate && f[1] == ".M" && f[4] == f[5] && f[4] != "160000":
				if ptr, ok := h.pointerBlob(ctx, f[7]); ok {
					lfsMaybe = append(lfsMaybe, lfsCandidate{path: f[8], ptr: &ptr})
					continue
				}
			}
			st.Changes = append(st.Changes, grove.Change{Path: f[8], Kind: kind})
			st.Dirty = true
		case strings.HasPrefix(rec, "u "):
			f := strings.SplitN(rec, " ", 11)
			if len(f) == 11 {
				st.Conflicts = append(st.Conflicts, f[10])
				st.Changes = append(st.Changes, grove.Change{Path: f[10], Kind: grove.ChangeModified})
				st.Dirty = true
			}
		case strings.HasPrefix(rec, "? "):
			p := strings.TrimPrefix(rec, "? ")
			if slices.Contains(blockers, p) {
				continue // a checkpoint skips it (SkipSparseConflict)
			}
			st.Changes = append(st.Changes, grove.Change{Path: p, Kind: grove.ChangeUntracked})
			full := filepath.Join(mf.Dir, filepath.FromSlash(p))
			if strings.HasSuffix(p, "/") {
				// A nested repository (git shows it as one entry): a
				// checkpoint captures its files, if it has any.
				if holdsFiles(full) {
					st.Dirty = true
				}
			} else if fi, err := os.Lstat(full); err != nil || fi.Size() <= grove.DefaultMaxNewFileSize || !fi.Mode().IsRegular() {
				st.Dirty = true
			} else if gate {
				lfsMaybe = append(lfsMaybe, lfsCandidate{path: p})
			}
		}
	}
	if st.Commit == "(initial)" {
		st.Commit = ""
	}
	if err := h.resolveLFS(ctx, mf, lfsMaybe, &st); err != nil {
		return grove.Status{}, h.wrap(op, err)
	}
	if err := h.submoduleChanges(ctx, mf, &st); err != nil {
		return grove.Status{}, h.wrap(op, err)
	}
	slices.SortFunc(st.Changes, func(a, b grove.Change) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(st.Conflicts)
	last, err := h.w.repo.Checkpoints(ctx, mf.ID, 1)
	if err != nil {
		return grove.Status{}, h.wrap(op, err)
	}
	if len(last) == 1 {
		st.LastCheckpoint = last[0].ID
	}
	return st, nil
}

// submoduleChanges adds to st what became of the head's submodule
// directories, which git status does not look into (grove's git never
// runs inside one): one gone is deleted; one that holds a file a
// checkpoint would capture (one git does not ignore, outside any .git) is
// modified; one that is not a directory any more is modified. The index's
// gitlinks are read once for each version of the index file.
//
// A checked-out submodule is asked instead (see moduleStatus).
func (h *head) submoduleChanges(ctx context.Context, mf registry.Manifest, st *grove.Status) error {
	gitlinks := h.indexMarks(mf).gitlinks
	if len(gitlinks) == 0 {
		return nil
	}
	mods, err := h.w.headModules(ctx, mf, filepath.Join(mf.Admin, "index"))
	if err != nil {
		return err
	}
	checkedOut := map[string]bool{}
	for _, m := range mods {
		checkedOut[m.path] = true
		if slices.ContainsFunc(st.Changes, func(c grove.Change) bool { return c.Path == m.path }) {
			continue
		}
		dirty, err := h.moduleStatus(ctx, mf, m, st)
		if err != nil {
			return err
		}
		if dirty {
			st.Changes = append(st.Changes, grove.Change{Path: m.path, Kind: grove.ChangeModified})
			st.Dirty = true
		}
	}
	slices.SortFunc(st.Submodules, func(a, b grove.SubmoduleStatus) int { return strings.Compare(a.Path, b.Path) })
	for _, p := range gitlinks {
		if checkedOut[p] || slices.ContainsFunc(st.Changes, func(c grove.Change) bool { return c.Path == p }) {
			continue
		}
		kind := grove.ChangeModified // not a directory any more
		full := filepath.Join(mf.Dir, filepath.FromSlash(p))
		if fi, err := os.Lstat(full); os.IsNotExist(err) {
			kind = grove.ChangeDeleted
		} else if err == nil && fi.IsDir() {
			kind = ""
			if files := filesIn(full, p); len(files) > 0 {
				ignored, err := h.git(ctx, gitcmd.Cmd{Stdin: strings.NewReader(strings.Join(files, "\x00") + "\x00"),
					Args: []string{"check-ignore", "--no-index", "-z", "--stdin"}})
				if err != nil && gitcmd.ExitCode(err) != 1 {
					return err
				}
				if strings.Count(ignored, "\x00") < len(files) {
					kind = grove.ChangeModified // a file a checkpoint captures
				}
			}
		}
		if kind != "" {
			st.Changes = append(st.Changes, grove.Change{Path: p, Kind: kind})
			st.Dirty = true
		}
	}
	return nil
}

// indexMarks returns what Status needs of the marks of the head's index,
// read once for each version of the file; nothing where it cannot be
// read (git status answered from it a moment ago).
func (h *head) indexMarks(mf registry.Manifest) gitlinkCache {
	index := filepath.Join(mf.Admin, "index")
	fi, err := os.Stat(index)
	if err != nil {
		return gitlinkCache{}
	}
	key, _ := regfile.FileKey(fi)
	h.mu.Lock()
	c := h.gitlinks
	h.mu.Unlock()
	if key != "" && c.key == key {
		return c
	}
	marks, err := h.w.repo.Index.ReadMarks(index)
	if err != nil {
		return gitlinkCache{}
	}
	c = gitlinkCache{key: key, attributes: marks.AttributeFiles}
	for _, p := range marks.Gitlinks {
		if !slices.Contains(marks.Skipped, p) {
			c.gitlinks = append(c.gitlinks, p)
		}
	}
	h.mu.Lock()
	h.gitlinks = c
	h.mu.Unlock()
	return c
}

// filesIn lists, as slash paths under rel, the files a checkpoint would
// take below the directory dir (links, and regular files up to the new
// file size cap) outside any .git entry, reading each directory without
// blocking or following a link (regfile.ReadDir).
func filesIn(dir, rel string) []string {
	ents, err := regfile.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		switch {
		case e.Name() == ".git":
		case e.IsDir():
			out = append(out, filesIn(filepath.Join(dir, e.Name()), rel+"/"+e.Name())...)
		case e.Type()&fs.ModeSymlink != 0:
			out = append(out, rel+"/"+e.Name())
		case e.Type().IsRegular():
			if fi, err := e.Info(); err == nil && fi.Size() <= grove.DefaultMaxNewFileSize {
				out = append(out, rel+"/"+e.Name())
			}
		}
	}
	return out
}

// holdsFiles reports whether dir holds a file or symlink outside any
// ".git" entry, stopping at the first.
func holdsFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		switch {
		case e.Name() == ".git":
		case e.IsDir():
			if holdsFiles(filepath.Join(dir, e.Name())) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// Diff runs git diff without external diff drivers or text conversion. To
// the live working tree, the head's state is first staged into a
// throwaway index (as a checkpoint would capture it, untracked files
// included), so the diff shows what a checkpoint now would record.
func (h *head) Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error) {
	const op = "diff"
	mf, err := h.enterTree(ctx, "Diff")
	if err != nil {
		return grove.Diff{}, err
	}
	a, err := h.w.repo.Resolve(ctx, op, from)
	if err != nil {
		return grove.Diff{}, err
	}
	// The prefixes are pinned: diff.noprefix or diff.mnemonicPrefix in the
	// repository's config (which an agent can set) would change the patch's
	// headers, which callers read.
	args := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-color", "--ignore-submodules=dirty", "--src-prefix=a/", "--dst-prefix=b/", a}
	var env []string
	if to == grove.Live {
		f, err := os.CreateTemp(mf.Admin, "grove-diff-index-*")
		if err != nil {
			return grove.Diff{}, h.wrap(op, err)
		}
		_ = f.Close()
		tmp := f.Name()
		defer os.Remove(tmp)
		err = os.Remove(tmp)
		if err == nil {
			var data []byte
			data, err = copyIndex(&h.w.repo.Index, filepath.Join(mf.Admin, "index"), tmp)
			h.w.repo.Index.Put(data)
			if errors.Is(err, gitfmt.ErrDamagedIndex) {
				err = h.rebuildIndex(ctx, tmp, "HEAD")
			}
		}
		if err == nil {
			err = h.retryOnIndex(ctx, tmp, "HEAD", func() error {
				_, err := h.capture(ctx, mf, tmp, nil, &backend.CheckpointOptions{}, false)
				return err
			})
		}
		if err != nil {
			return grove.Diff{}, h.wrap(op, err)
		}
		defer os.Remove(tmp + ".lock")
		env = []string{"GIT_INDEX_FILE=" + tmp}
		args = append(args, "--cached")
		if h.w.repo.Promised() {
			tree, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"write-tree"}})
			if err == nil {
				err = h.w.ensureTrees(ctx, op, nil, [2]string{a, tree}, [2]string{tree, a})
			}
			if err != nil {
				return grove.Diff{}, h.wrap(op, err)
			}
		}
	} else {
		b, err := h.w.repo.Resolve(ctx, op, to)
		if err != nil {
			return grove.Diff{}, err
		}
		if err := h.w.ensureTrees(ctx, op, nil, [2]string{a, b}, [2]string{b, a}); err != nil {
			return grove.Diff{}, err
		}
		args = append(args, b)
	}
	patch, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append(slices.Clone(args), "-p", "--")})
	if err != nil {
		return grove.Diff{}, h.wrap(op, err)
	}
	stats, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append(slices.Clone(args), "--numstat", "-z", "--")})
	if err != nil {
		return grove.Diff{}, h.wrap(op, err)
	}
	files, binary := numstat(stats)
	if len(binary) > 0 {
		if patch, err = h.showText(ctx, env, args, patch, files, binary); err != nil {
			return grove.Diff{}, h.wrap(op, err)
		}
	}
	d := grove.Diff{Patch: patch, Files: files}
	if d.Patch != "" {
		d.Patch += "\n"
	}
	slices.SortFunc(d.Files, func(a, b grove.FileStat) int { return strings.Compare(a.Path, b.Path) })
	return d, nil
}

// numstat reads git diff --numstat -z: each file's counts, in git's order,
// and the indexes of those git took for binary ("-").
func numstat(out string) (files []grove.FileStat, binary []int) {
	for _, rec := range strings.Split(out, "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "-" {
			binary = append(binary, len(files))
		}
		added, _ := strconv.Atoi(f[0]) // "-" for binary files: 0
		deleted, _ := strconv.Atoi(f[1])
		files = append(files, grove.FileStat{Path: f[2], Added: added, Deleted: deleted})
	}
	return files, binary
}

// maxTextCheck is the largest blob showText diffs as text.
const maxTextCheck = 8 << 20

// showText shows the lines of the files git took for binary only because
// the head's attributes say so (-diff, binary, a diff driver): an agent's
// .gitattributes would hide them from every diff a reviewer reads. Those
// files (each blob at most maxTextCheck bytes) are diffed again with
// --text, and their sections of patch, found by their header line, and
// their counts in files are replaced. A file binary by its content (no
// diff attribute) stays as git showed it. args is the diff's command line
// up to its revisions.
func (h *head) showText(ctx context.Context, env, args []string, patch string, files []grove.FileStat, binary []int) (string, error) {
	env = append(slices.Clone(env), "GIT_LITERAL_PATHSPECS=1")
	paths := make([]string, len(binary))
	for i, b := range binary {
		paths[i] = files[b].Path
	}
	// Which of them an attribute made binary.
	attrs, err := h.git(ctx, gitcmd.Cmd{Args: []string{"check-attr", "-z", "--stdin", "diff"}, Stdin: strings.NewReader(strings.Join(paths, "\x00") + "\x00")})
	if err != nil {
		return "", err
	}
	var forced []string
	rec := strings.Split(attrs, "\x00")
	for i := 0; i+2 < len(rec); i += 3 {
		if rec[i+2] != "unspecified" {
			forced = append(forced, rec[i])
		}
	}
	// Their blobs' sizes: git diff --raw names them, cat-file sizes them.
	var raw []string
	for _, chunk := range chunks(forced) {
		out, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append(slices.Clone(args), append([]string{"--raw", "-z", "--abbrev=40", "--"}, chunk...)...)})
		if err != nil {
			return "", err
		}
		raw = append(raw, strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")...)
	}
	var ids []string
	for i := 0; i+1 < len(raw); i += 2 {
		if f := strings.Fields(raw[i]); len(f) >= 4 {
			ids = append(ids, f[2], f[3])
		}
	}
	if len(ids) == 0 {
		return patch, nil
	}
	sizes, err := h.git(ctx, gitcmd.Cmd{Args: []string{"cat-file", "--batch-check=%(objectname) %(objectsize)"}, Stdin: strings.NewReader(strings.Join(ids, "\n") + "\n")})
	if err != nil {
		return "", err
	}
	big := map[string]bool{}
	for _, l := range strings.Split(sizes, "\n") {
		// "missing" is the null ID of an added or deleted file's other side
		if id, n, ok := strings.Cut(l, " "); ok {
			if size, err := strconv.Atoi(n); err == nil && size > maxTextCheck {
				big[id] = true
			}
		}
	}
	var small []string
	for i := 0; i+1 < len(raw); i += 2 {
		if f := strings.Fields(raw[i]); len(f) >= 4 && !big[f[2]] && !big[f[3]] && !slices.Contains(small, raw[i+1]) {
			small = append(small, raw[i+1])
		}
	}
	// Their sections again, as text, by header line (a type change has
	// two sections with one header).
	text := map[string][]string{}
	for _, chunk := range chunks(small) {
		out, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append(append(slices.Clone(args), "--text", "-p", "--"), chunk...)})
		if err != nil {
			return "", err
		}
		for _, sec := range splitPatch(out) {
			hdr, _, _ := strings.Cut(sec, "\n")
			text[hdr] = append(text[hdr], strings.TrimSuffix(sec, "\n")+"\n")
		}
	}
	for _, p := range small {
		sections := text[diffHeader(p)]
		j := slices.IndexFunc(files, func(f grove.FileStat) bool { return f.Path == p })
		if len(sections) == 0 || j < 0 {
			continue
		}
		files[j].Added, files[j].Deleted = 0, 0
		for _, sec := range sections {
			a, d := countLines(sec)
			files[j].Added += a
			files[j].Deleted += d
		}
	}
	var b strings.Builder
	done := map[string]bool{}
	for _, sec := range splitPatch(patch) {
		hdr, _, _ := strings.Cut(sec, "\n")
		if t, ok := text[hdr]; ok {
			if !done[hdr] {
				done[hdr] = true
				b.WriteString(strings.Join(t, ""))
			}
			continue
		}
		b.WriteString(strings.TrimSuffix(sec, "\n") + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// chunks cuts paths into runs short enough for one command line.
func chunks(paths []string) [][]string {
	var out [][]string
	for n := 0; len(paths) > 0; {
		i := 0
		for n = 0; i < len(paths) && (i == 0 || n+len(paths[i]) < 64<<10); i++ {
			n += len(paths[i]) + 1
		}
		out = append(out, paths[:i])
		paths = paths[i:]
	}
	return out
}

// diffHeader is the "diff --git" line git writes for a path (with the
// prefixes and core.quotePath grove pins, and no renames).
func diffHeader(p string) string {
	return "diff --git " + cQuote("a/"+p) + " " + cQuote("b/"+p)
}

// cQuote quotes s as git quotes a path (quote_c_style, core.quotePath on):
// in double quotes, with C escapes and octal bytes, when it holds a
// control character, a quote, a backslash or a byte outside ASCII.
func cQuote(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' || r >= 0x7f }) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, "\\%03o", c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// countLines counts the added and deleted lines of one file's section.
func countLines(section string) (added, deleted int) {
	_, hunks, _ := strings.Cut(section, "\n@@ ")
	_, hunks, _ = strings.Cut(hunks, "\n") // the rest of the first hunk's header
	for _, l := range strings.Split(hunks, "\n") {
		switch {
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			deleted++
		}
	}
	return added, deleted
}

// splitPatch cuts a patch into its files' sections, each from its
// "diff --git" line (no line of a file's content starts so: each has a
// prefix).
func splitPatch(patch string) []string {
	var out []string
	for patch != "" {
		i := strings.Index(patch, "\ndiff --git ")
		if i < 0 {
			out = append(out, patch)
			break
		}
		out = append(out, patch[:i+1])
		patch = patch[i+1:]
	}
	return out
}

func (h *head) SetArchived(ctx context.Context, archived bool) error {
	if _, err := h.enter(ctx, "SetArchived"); err != nil {
		return err
	}
	if err := h.w.setState(ctx, h.binding.Head, archived); err != nil {
		return err
	}
	h.mu.Lock()
	h.mf.State = grove.StateActive
	if archived {
		h.mf.State = grove.StateArchived
	}
	h.mu.Unlock()
	return nil
}

// Destroy removes a grove-owned head's worktree (directory and
// registration) with git worktree remove, keeps its branch and checkpoint
// refs, and turns its manifest into a tombstone. An attached head is only
// forgotten. With a remote, the head's refs there are deleted then, after
// any push of it under way (see transport.Client.DeleteHead); a remote
// out of reach fails nothing here, and Retain deletes them later.
func (h *head) Destroy(ctx context.Context, opts *backend.DestroyOptions) error {
	mf, err := h.enter(ctx, "Destroy")
	if err != nil {
		return err
	}
	if err := h.destroy(ctx, mf, opts); err != nil {
		return err
	}
	if h.w.remote != nil && !mf.Attached {
		if _, err := h.w.remoteClient().DeleteHead(ctx, mf); err != nil {
			rec := h.w.meta.ReadPushed(mf.ID, h.w.remote.URL)
			rec.Error = err.Error()
			_ = h.w.meta.WritePushed(mf.ID, rec)
		}
	}
	return nil
}

// destroy is Destroy but for the remote, under the head's and the
// repository's locks.
func (h *head) destroy(ctx context.Context, mf registry.Manifest, opts *backend.DestroyOptions) error {
	const op = "destroy"
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return err
	}
	defer l.Unlock()
	if !mf.Attached && !opts.SkipTeardown {
		if fi, err := os.Lstat(mf.Dir); err == nil && fi.IsDir() {
			if err := h.w.runHook(ctx, "gitbackend: destroy", grove.HookTeardown, h.w.teardown, &mf); err != nil {
				return err
			}
		}
	}
	rl, err := h.w.lockRepo(ctx, "destroy "+mf.Name)
	if err != nil {
		return err
	}
	defer rl.Unlock()
	var trashed string
	if !mf.Attached {
		if trashed, err = h.removeWorktree(mf); err != nil {
			return h.wrap(op, err)
		}
		// Its submodules' registrations go with it (their work is in the
		// checkpoints a destroy without Discard made first).
		_ = h.w.dropModules(mf.ID, nil)
	}
	tomb, err := h.w.meta.ReadManifest(mf.ID)
	if err != nil {
		tomb = &mf
	}
	tomb.State = grove.StateDestroyed
	tomb.Destroying = false
	if err := h.w.meta.WriteManifest(tomb); err != nil {
		return h.wrap(op, err)
	}
	if trashed != "" {
		h.w.b.trash.Delete(trashed)
	}
	// A sandbox's private git dir goes with the head (its commits were
	// brought in by the final checkpoint), and so does its anchor.
	_ = os.RemoveAll(h.w.sealOf(mf.ID).Root)
	h.w.b.anchors().Drop(mf.Dir)
	h.mu.Lock()
	h.mf.State = grove.StateDestroyed
	h.mu.Unlock()
	_ = h.Close()
	return nil
}

// removeWorktree takes the head's directory and registration away; callers
// hold the head and repository locks. The directory is renamed into the
// trash (see trash.go) and its path there returned, for the caller to
// delete in the background once the tombstone is written; the manifest
// says Destroying meanwhile, so that a destroy interrupted after the
// rename is finished by the next open. Only a directory the repository
// registers as the head's worktree (git's record of it names the
// directory, or the directory's .git file names the head's git dir) is
// taken, whatever else its .git file now says; anything else is left in
// place with FailedPrecondition. A symlink in its place is removed, never
// followed.
func (h *head) removeWorktree(mf registry.Manifest) (string, error) {
	if fi, err := os.Lstat(mf.Dir); err == nil && !fi.IsDir() {
		// Something took the directory's place: only the link goes.
		if err := os.Remove(mf.Dir); err != nil {
			return "", err
		}
	}
	var trashed string
	if _, err := os.Lstat(mf.Dir); err == nil {
		back, rerr := regfile.Read(filepath.Join(mf.Admin, "gitdir"), registry.MaxSmallFile)
		registered := rerr == nil && filepath.Dir(gitfmt.GitLine(back)) == mf.Dir
		if admin, gerr := gitfmt.ReadGitFile(mf.Dir); gerr == nil && admin == mf.Admin {
			registered = true
		}
		if ents, err := os.ReadDir(mf.Dir); err == nil && len(ents) == 0 {
			registered = true // nothing in it to lose
		}
		if !registered {
			return "", &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: destroy", Head: mf.Name, Path: mf.Dir,
				Err: fmt.Errorf("%s is no longer registered as the head's worktree; left in place", mf.Dir)}
		}
		mark := mf
		mark.Destroying = true
		if err := h.w.meta.WriteManifest(&mark); err != nil {
			return "", err
		}
		h.w.b.crashPoint("destroy:marked")
		if trashed, err = h.w.meta.MoveToTrash(mf.Dir, mf.ID); err != nil {
			// No trash beside the head (a read-only parent, say): the
			// files are deleted now instead.
			if err := os.RemoveAll(mf.Dir); err != nil {
				return "", err
			}
			trashed = ""
		}
		h.w.b.crashPoint("destroy:trashed")
	}
	// The registration is removed directly, and only it (git worktree
	// prune would also follow a symlink an agent planted among the
	// registrations and delete what it leads to).
	return trashed, h.w.removeAdmin(mf.Admin)
}

func (h *head) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: close head", Head: h.mf.Name, Err: errors.New("head is already closed")}
	}
	h.closed = true
	h.fs.Close()
	h.stopWatching()
	if h.bind != nil {
		err := h.bind.Unlock()
		h.bind = nil
		return err
	}
	return nil
}
