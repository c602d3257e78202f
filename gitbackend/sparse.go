package gitbackend

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/sparse"
)

// sparseGitDir makes, for one sparse checkout, a git dir of grove's own
// under a new private temporary directory: it shares common, its HEAD is
// commit (detached), and its sparse-checkout file is set's cone (nil: the
// whole tree). It returns the dir, the options that make a git command run
// there apply the set, and what removes it. The set is never written where
// the agent can reach it before git reads it: a head's own git dir is the
// agent's to write, and a FIFO put there once grove has written the file
// would hang git's read of it.
func sparseGitDir(common, commit string, set []string) (dir string, args []string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "grove-sparse-")
	if err != nil {
		return "", nil, nil, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	dir = filepath.Join(tmp, "git")
	// The whole tree is one pattern, outside cone mode.
	patterns, cone := "/*\n", "false"
	if set != nil {
		patterns, cone = sparse.Set(set).Patterns(), "true"
	}
	err = scratchGitDir(dir, common, commit)
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, "info"), 0o700)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "info", "sparse-checkout"), []byte(patterns), 0o600)
	}
	if err != nil {
		cleanup()
		return "", nil, nil, err
	}
	return dir, []string{"-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=" + cone, "-c", "core.logAllRefUpdates=false"}, cleanup, nil
}

// checkoutSparse makes the index at index and the files of sparse head mf
// commit's, the set's files alone written (git read-tree --reset -u).
func (w *workspace) checkoutSparse(ctx context.Context, mf *registry.Manifest, index, commit string) error {
	dir, args, cleanup, err := sparseGitDir(w.repo.Common, commit, mf.Sparse)
	if err != nil {
		return err
	}
	defer cleanup()
	_, err = w.repo.Run(ctx, gitcmd.Cmd{GitDir: dir, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir,
		Env: []string{"GIT_INDEX_FILE=" + index}, Args: append(args, "read-tree", "--reset", "-u", "HEAD"), Parallel: w.repo.ManyFiles(index)})
	return err
}

// markSparse gives the index at index — data, or read from the file when
// nil — the skip-worktree marks of head mf (see sparseWalk; deletions
// says whether the set's deleted files are looked for), through run, and
// returns what it found; nothing for a head with the whole tree.
func markSparse(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), mf registry.Manifest, index string, data []byte, deletions bool) (m sparseMarks, err error) {
	if mf.Sparse == nil {
		return m, nil
	}
	if data == nil {
		if data, err = regfile.Read(index, gitfmt.MaxIndexFile); err != nil {
			return m, err
		}
	}
	if m, err = sparseWalk(data, mf.Dir, mf.Sparse, deletions); err != nil {
		return m, err
	}
	return m, applySparse(ctx, run, mf, index, &m)
}

// applySparse gives the index at index the marks m says, deciding each
// unsure entry first: kept where the files outside the set stand for what
// the head's disk was last made from (mf.SparseBase), deleted otherwise
// (with no record of that, every one is kept).
func applySparse(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), mf registry.Manifest, index string, m *sparseMarks) error {
	if len(m.unsure) > 0 {
		out := ""
		if mf.SparseBase != "" {
			var err error
			if out, err = run(ctx, gitcmd.Cmd{Args: []string{"ls-tree", "-r", "-z", "--full-tree", string(mf.SparseBase)}}); err != nil {
				return err
			}
		}
		base := map[string]string{}
		for _, rec := range strings.Split(out, "\x00") {
			if meta, p, ok := strings.Cut(rec, "\t"); ok {
				if f := strings.Fields(meta); len(f) == 3 {
					base[p] = f[2]
				}
			}
		}
		for p, oid := range m.unsure {
			if base[p] == oid || mf.SparseBase == "" {
				m.mark = append(m.mark, p)
			} else {
				m.deleted = append(m.deleted, p)
			}
		}
	}
	return updateIndex(ctx, run, index, []indexStep{{m.unmark, "--no-skip-worktree"}, {m.mark, "--skip-worktree"}})
}

// ignoredOutside lists (at most five of) the ignored files of the head,
// as the index at priv sees them, that set leaves out: git deletes them
// with their directories when it narrows a head to set.
func (h *head) ignoredOutside(ctx context.Context, priv string, set []string) ([]string, error) {
	if set == nil {
		return nil, nil
	}
	out, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory"}})
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, p := range strings.Split(out, "\x00") {
		if p == "" || len(lost) == 5 {
			continue
		}
		// An ignored directory is listed as one entry, "dir/": its files
		// are where a file in it would be.
		probe := p
		if strings.HasSuffix(p, "/") {
			probe += "x"
		}
		if !sparse.Set(set).Contains(probe) {
			lost = append(lost, p)
		}
	}
	return lost, nil
}

// stagedOutside lists (at most five of) the paths whose entry in the
// index at priv differs from commit's and that set leaves out.
func (h *head) stagedOutside(ctx context.Context, priv, commit string, set []string) ([]string, error) {
	if set == nil {
		return nil, nil
	}
	out, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"diff-index", "--cached", "-z", "--name-only", "--no-renames", commit}})
	if err != nil {
		return nil, err
	}
	var staged []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" && len(staged) < 5 && !sparse.Set(set).Contains(p) {
			staged = append(staged, p)
		}
	}
	return staged, nil
}

// runAs runs a git command in the place base names (its git dir, work
// tree and environment, the command's own environment after them).
func (w *workspace) runAs(base gitcmd.Cmd) func(context.Context, gitcmd.Cmd) (string, error) {
	return func(ctx context.Context, c gitcmd.Cmd) (string, error) {
		c.GitDir, c.CommonDir, c.WorkTree, c.Dir = base.GitDir, base.CommonDir, base.WorkTree, base.Dir
		c.Env = append(append([]string{}, base.Env...), c.Env...)
		return w.repo.Run(ctx, c)
	}
}

// sparseMarks is what a checkpoint of a sparse head does with the
// entries of its index (see sparseWalk).
type sparseMarks struct {
	unmark, mark []string
	// unsure are the entries outside the set whose files are not on disk
	// and not marked, with their object IDs: kept where mf.SparseBase has
	// the same, taken for deleted otherwise.
	unsure map[string]string
	// blockers are the files and links where the head keeps a directory
	// outside its set: capturing one would drop that directory from the
	// checkpoint, so a checkpoint skips it.
	blockers []string
	// deleted are the files the agent deleted: in the set and not on
	// disk, or unsure and not what SparseBase has (markSparse fills it).
	deleted []string
}

// sparseWalk reads index data of a sparse head at dir with set. An entry
// whose file is on disk is looked at (its skip-worktree mark cleared: a
// file written outside the set is captured, never lost behind the mark),
// and so is one in the set (a missing file there is a deletion, whatever
// mark the agent set). One outside the set whose file is not on disk is
// kept if marked (never materialised), or looked up if not (see unsure).
// Directories are looked up once each. An unmarked file in the set is
// looked up only for deletions (git add and git status see it as any
// file): a change of the set needs them, a checkpoint or a status not.
func sparseWalk(data []byte, dir string, set sparse.Set, deletions bool) (sparseMarks, error) {
	for _, hashLen := range []int{sha1.Size, sha256.Size} {
		if m, ok := sparseWalkAs(data, hashLen, dir, set, deletions); ok {
			return m, nil
		}
	}
	return sparseMarks{}, gitfmt.ErrDamagedIndex
}

// sparseWalkAs is sparseWalk over object IDs of hashLen bytes; ok is false
// if the entries do not parse so.
func sparseWalkAs(data []byte, hashLen int, dir string, set sparse.Set, deletions bool) (m sparseMarks, ok bool) {
	const (
		isDir = iota + 1
		absent
		blocked // a file or a link where the tree has a directory
	)
	kinds := map[string]int{".": isDir}
	var kind func(d string) int
	kind = func(d string) int {
		if k, ok := kinds[d]; ok {
			return k
		}
		k := absent
		if pk := kind(path.Dir(d)); pk == isDir {
			if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d))); err == nil {
				k = blocked
				if fi.IsDir() {
					k = isDir
				}
			}
		} else if pk == blocked {
			k = blocked
		}
		kinds[d] = k
		return k
	}
	blockers := map[string]bool{}
	m.unsure = map[string]string{}
	_, ok = gitfmt.WalkIndex(data, hashLen, func(e *gitfmt.RawEntry) {
		if e.Flags&gitfmt.FlagStage != 0 || e.Mode == 0o160000 {
			return
		}
		p := string(e.Name)
		skipped := e.Ext&gitfmt.FlagSkipWorktree != 0
		inSet := set.Contains(p)
		if inSet && !skipped && !deletions {
			return // git sees it as any file
		}
		present := false
		switch kind(path.Dir(p)) {
		case isDir:
			_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
			present = err == nil
		case blocked:
			if !inSet {
				for d := path.Dir(p); d != "."; d = path.Dir(d) {
					if kind(path.Dir(d)) == isDir {
						blockers[d] = true // the topmost file in the way
						break
					}
				}
			}
		}
		switch {
		case skipped && (present || inSet):
			m.unmark = append(m.unmark, p)
		case !present && !inSet && !skipped:
			m.unsure[p] = hex.EncodeToString(e.OID)
		}
		if inSet && !present {
			m.deleted = append(m.deleted, p)
		}
	})
	if !ok {
		return sparseMarks{}, false
	}
	for b := range blockers {
		m.blockers = append(m.blockers, b)
	}
	slices.Sort(m.blockers)
	return m, true
}

// SetSparse makes set the head's (see backend.Sparser): git sparse-checkout
// reapply, with the new set read from a private git dir, over a private
// copy of the head's index that has the old set's marks (see markSparse);
// then the manifest records the set, and the copy becomes the head's index.
func (h *head) SetSparse(ctx context.Context, set []string) error {
	const op = "set sparse"
	mf, err := h.enterTree(ctx, "SetSparse")
	if err != nil {
		return err
	}
	switch {
	case mf.Attached:
		return h.fail(grove.FailedPrecondition, op, "an attached head cannot be sparse")
	case h.w.sealed():
		return h.fail(grove.Unimplemented, op, "a sparse head under a sandbox: its sealed git dir holds the whole index")
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return err
	}
	defer l.Unlock()
	st, err := h.state(ctx, mf, op)
	if err != nil {
		return err
	}
	if st.op != "" {
		return h.fail(grove.FailedPrecondition, op, "a %s is in progress in the head; finish or abort it first", st.op)
	}
	priv, data, err := h.seedIndex(ctx, mf, privateIndex, st.commit)
	defer h.w.repo.Index.Put(data)
	if err != nil {
		return err
	}
	defer os.Remove(priv)
	// The old set's view of the index: what is a deletion, what is kept.
	// A whole head's deletions are every tracked file not on disk.
	var m sparseMarks
	if mf.Sparse != nil {
		m, err = markSparse(ctx, h.git, mf, priv, data, true)
	} else if m, err = sparseWalk(data, mf.Dir, nil, true); err == nil {
		err = updateIndex(ctx, h.git, priv, []indexStep{{m.unmark, "--no-skip-worktree"}})
	}
	if err != nil {
		return h.wrap(op, err)
	}
	// git removes a directory leaving the set when it holds ignored files
	// alone, and a file leaving it that holds what the index does: an
	// ignored file is in no checkpoint, and a change staged (git add) and
	// not checkpointed would be in the index alone. Such a change of the
	// set is refused.
	if lost, err := h.ignoredOutside(ctx, priv, set); err != nil {
		return h.wrap(op, err)
	} else if len(lost) > 0 {
		return h.fail(grove.FailedPrecondition, op, "ignored files would be deleted with the directories leaving the set (%s); move them, or keep their directories in the set", strings.Join(lost, ", "))
	}
	if staged, err := h.stagedOutside(ctx, priv, st.commit, set); err != nil {
		return h.wrap(op, err)
	} else if len(staged) > 0 {
		return h.fail(grove.FailedPrecondition, op, "changes staged and not checkpointed would leave the disk with the set (%s); checkpoint first", strings.Join(staged, ", "))
	}
	if err := h.w.ensureTrees(ctx, op, set, [2]string{st.commit, ""}); err != nil {
		return err
	}
	swap, err := h.lockIndex(ctx, mf, "")
	if err != nil {
		return err
	}
	defer func() {
		if swap != nil {
			swap.abort()
		}
	}()
	dir, args, cleanup, err := sparseGitDir(h.w.repo.Common, st.commit, set)
	if err != nil {
		return h.wrap(op, err)
	}
	defer cleanup()
	// The record first: once git starts changing files, the new set is
	// the one that explains the disk, whatever happens next; and the
	// files outside it stand for the head's commit, as its index does.
	next := h.manifest()
	next.Sparse, next.SparseBase = set, grove.CheckpointID(st.commit)
	if set == nil {
		next.SparseBase = ""
	}
	if err := h.w.meta.WriteManifest(&next); err != nil {
		return h.wrap(op, err)
	}
	h.mu.Lock()
	h.mf.Sparse, h.mf.SparseBase = next.Sparse, next.SparseBase
	h.mu.Unlock()
	fctx, cancel := cleanupContext(ctx) // not cut short half-way
	defer cancel()
	if _, err := h.git(fctx, gitcmd.Cmd{GitDir: dir, Env: []string{"GIT_INDEX_FILE=" + priv}, Args: append(args, "sparse-checkout", "reapply")}); err != nil {
		return h.wrap(op, err)
	}
	// git marks a missing file outside the new set as never checked out:
	// one the agent deleted is taken out of the index, a deletion the next
	// checkpoint records whatever marks it gets later.
	if err := updateIndex(fctx, h.git, priv, []indexStep{{m.deleted, "--force-remove"}}); err != nil {
		return h.wrap(op, err)
	}
	if err := h.w.checkoutLFS(fctx, &next, priv); err != nil {
		return h.wrap(op, err)
	}
	if err := h.w.checkoutModules(fctx, &next, priv, false); err != nil {
		return h.wrap(op, err)
	}
	err = swap.commit(priv)
	swap = nil
	if err == nil {
		h.w.schedulePush(next) // the remote records the set, for relocation
	}
	return h.wrap(op, err)
}
