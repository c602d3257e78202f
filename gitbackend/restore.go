package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

func (h *head) Restore(ctx context.Context, to grove.Rev) (backend.RestoreResult, error) {
	const op = "restore"
	mf, err := h.enterTree(ctx, "Restore")
	if err != nil {
		return backend.RestoreResult{}, err
	}
	if to == "" {
		return backend.RestoreResult{}, h.fail(grove.InvalidArgument, op, "empty revision")
	}
	target, err := h.w.repo.Resolve(ctx, op, to)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	// What the target changes, from the files on disk (the branch's).
	current, _ := h.w.repo.Ref("refs/heads/" + mf.Branch)
	if err := h.w.ensureTrees(ctx, op, mf.Sparse, [2]string{target, current}); err != nil {
		return backend.RestoreResult{}, err
	}
	l, err := h.lock(ctx, mf, op)
	if err != nil {
		return backend.RestoreResult{}, err
	}
	defer l.Unlock()
	// Retention keeps every restore target: recorded before anything
	// changes, so a restore that happened is never unrecorded.
	if err := h.w.meta.PinRestore(mf.ID, target); err != nil {
		return backend.RestoreResult{}, h.fail(grove.Internal, op, "recording the restore target: %v", err)
	}
	if mf.Sparse != nil {
		// What the files outside the set stand for is the target's from
		// here: recorded first, put back if the restore fails.
		if err := h.setSparseBase(grove.CheckpointID(target)); err != nil {
			return backend.RestoreResult{}, h.fail(grove.Internal, op, "recording the sparse base: %v", err)
		}
	}
	err = h.restore(ctx, mf, target)
	if err != nil {
		if mf.Sparse != nil {
			_ = h.setSparseBase(mf.SparseBase)
		}
		return backend.RestoreResult{}, h.wrap(op, err)
	}
	h.w.schedulePush(mf)
	return backend.RestoreResult{Commit: grove.CheckpointID(target)}, nil
}

// cleaner returns what removes the head's untracked files, ignored ones
// but keep's patterns excepted (git clean with the index env names), and
// what a checkpoint captures in the directories of the target's
// submodules (see cleanSubmodules; an attached head's are the user's
// own); the target's index is at priv. done removes what it prepared.
func (h *head) cleaner(ctx context.Context, mf registry.Manifest, priv string, keep []string) (clean func(context.Context, []string) error, done func(), err error) {
	var subIndex string
	var subPaths []string
	if !mf.Attached {
		if subIndex, subPaths, err = h.submoduleIndex(ctx, mf.Dir, priv); err != nil {
			return nil, nil, err
		}
	}
	clean = func(ctx context.Context, env []string) error {
		if _, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: append([]string{"clean", "-f", "-d", "-q"}, keep...)}); err != nil {
			return err
		}
		return h.cleanSubmodules(ctx, mf.Dir, subIndex, subPaths, keep)
	}
	return clean, func() { _ = os.Remove(subIndex) }, nil
}

// submoduleIndex prepares the clean of the submodule directories of the
// head at dir that hold anything (files the agent wrote there, a
// repository it made or checked out): a copy of the index at priv (the
// restore's target's) without their gitlinks, beside priv, in which git
// clean sees them as untracked directories. It returns the copy and the
// directories; none, "". A gitlink outside a sparse head's set is left.
func (h *head) submoduleIndex(ctx context.Context, dir, priv string) (index string, paths []string, err error) {
	data, err := h.w.repo.Index.ReadIndex(priv)
	defer h.w.repo.Index.Put(data)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	} else if err != nil {
		return "", nil, err
	}
	marks, err := gitfmt.MarksOf(data)
	if err != nil {
		return "", nil, err
	}
	for _, p := range marks.Gitlinks {
		if ents, err := regfile.ReadDir(filepath.Join(dir, filepath.FromSlash(p))); err == nil && len(ents) > 0 && !slices.Contains(marks.Skipped, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", nil, nil
	}
	index, err = h.withoutGitlinks(ctx, priv, data, paths)
	return index, paths, err
}

// withoutGitlinks writes beside the index at priv (its content data) a
// copy without the gitlinks paths, in which git sees what their
// directories hold as untracked files, and returns its path.
func (h *head) withoutGitlinks(ctx context.Context, priv string, data []byte, paths []string) (string, error) {
	index := priv + ".nogitlinks"
	if err := os.WriteFile(index, data, 0o644); err != nil {
		return "", err
	}
	if err := updateIndex(ctx, h.git, index, []indexStep{{paths, "--force-remove"}}); err != nil {
		_ = os.Remove(index)
		return "", err
	}
	return index, nil
}

// cleanSubmodules removes from the submodule directories paths what git
// clean removes from an untracked directory — the files a checkpoint
// captures, never ignored files or a repository — through the index
// submoduleIndex made, and gives back each directory git clean removed
// whole, empty, as a checkout leaves it. The workspace's safety
// checkpoint took those files, unless the caller discarded them.
func (h *head) cleanSubmodules(ctx context.Context, dir, index string, paths, keep []string) error {
	if index == "" {
		return nil
	}
	args := append(append([]string{"clean", "-f", "-d", "-q"}, keep...), "--")
	for _, p := range paths {
		args = append(args, ":(literal)"+p)
	}
	if _, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + index}, Args: args}); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, p := range paths {
		if err := root.Mkdir(filepath.FromSlash(p), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// setSparseBase records base as the head's SparseBase, in its manifest
// and in h; callers hold the head lock.
func (h *head) setSparseBase(base grove.CheckpointID) error {
	mf := h.manifest()
	mf.SparseBase = base
	if err := h.w.meta.WriteManifest(&mf); err != nil {
		return err
	}
	h.mu.Lock()
	h.mf.SparseBase = base
	h.mu.Unlock()
	return nil
}

// restore makes the head's files equal target's; callers hold the head
// lock. Order: refuse ignored-file collisions; write target's content
// where tracked files would be dropped (so nothing is removed first); make
// the tracked files equal target's; remove untracked, unignored files;
// for a grove-owned head, move its branch (through the repository's
// update-ref process) and swap the index in, while the files are removed
// if the head is on its own branch, after them if not.
//
// In the usual case — no tracked file dropped, no .gitignore changed, the
// index's cache-tree whole (as a checkpoint or a restore leaves it) and the
// target's trees loose — that is two git processes, reset and clean:
// what the target changes is read in-process, from the directories whose
// trees differ only (see diffTrees). Otherwise git diff-index tells, a
// third. (Reading the whole of both trees through go-git was tried: it
// cost three times as long as diff-index at 10,000 files.)
func (h *head) restore(ctx context.Context, mf registry.Manifest, target string) error {
	const op = "restore"
	st, err := h.state(ctx, mf, op)
	if err != nil {
		return err
	}
	if !mf.Attached && (st.op == grove.OpRebase || st.op == grove.OpApplyMailbox || st.op == grove.OpBisect) {
		return h.fail(grove.FailedPrecondition, op, "a %s is in progress in the head; finish or abort it first", st.op)
	}
	priv, data, err := h.seedIndex(ctx, mf, privateIndex, st.commit)
	defer h.w.repo.Index.Put(data)
	if err != nil {
		return err
	}
	defer os.Remove(priv)
	env := []string{"GIT_INDEX_FILE=" + priv}
	if mf.Sparse != nil {
		// A file on disk outside the set is the reset's to replace or
		// remove, as in the set: its mark would hide it from the reset.
		if _, err := markSparse(ctx, h.git, mf, priv, data, false); err != nil {
			return err
		}
	}
	many := h.w.repo.ManyFiles(priv)
	drops, keep, err := h.plan(ctx, mf, priv, data, st.commit, target)
	if err != nil {
		return err
	}
	done, err := h.mark(mf)
	if err != nil {
		return err
	}
	defer done()
	// Every lock the restore needs is taken before anything changes: the
	// head's index.lock (a git command of the user's may hold it: waited
	// for a bounded time, then Busy).
	var swap *indexSwap
	if !mf.Attached {
		if swap, err = h.lockIndex(ctx, mf, ""); err != nil {
			return err
		}
		defer func() {
			if swap != nil {
				swap.abort()
			}
		}()
	}
	if drops {
		// git reset removes the files it drops before it writes new ones:
		// write target's content first.
		c := gitcmd.Cmd{Env: env, Args: []string{"checkout", "-f", target, "--", ":/"}, Parallel: many}
		if mf.Sparse != nil {
			dir, args, cleanup, err := sparseGitDir(h.w.repo.Common, target, mf.Sparse)
			if err != nil {
				return err
			}
			defer cleanup()
			c.GitDir, c.Args = dir, append(args, c.Args...)
		}
		if _, err := h.git(ctx, c); err != nil {
			return err
		}
	}
	h.w.b.crashPoint("restore:written")
	if err := h.resetFiles(ctx, mf, env, target, many); err != nil {
		return err
	}
	h.w.b.crashPoint("restore:pruned")
	// Before the clean starts: the content goes in through temporary
	// files beside the pointers, which the clean would take.
	if err := h.w.checkoutLFS(ctx, &mf, priv); err != nil {
		return err
	}
	// The submodules too: a checkout the target has no submodule for is
	// unregistered, and its files are left to the clean.
	if err := h.w.checkoutModules(ctx, &mf, priv, true); err != nil {
		return err
	}
	clean, done, err := h.cleaner(ctx, mf, priv, keep)
	if err != nil {
		return err
	}
	defer done()
	if mf.Attached {
		return clean(ctx, env)
	}
	// The tracked files are the target's now: moving the branch and
	// swapping the index in finish even if ctx ends, so that the branch
	// and the index never disagree with them (a git killed inside a ref
	// update would also leave its lock behind). It waits for no lock of
	// grove's (the repository lock could be held for long, by a destroy or
	// by anyone who can open grove's metadata): moving the head's own
	// branch is one ref update, which git's own ref lock makes atomic,
	// waiting at most LockWait for another git command.
	fctx, cancel := cleanupContext(ctx)
	defer cancel()
	if !st.onOwn {
		if err := clean(ctx, env); err != nil {
			return err
		}
		h.w.b.crashPoint("restore:cleaned")
		if _, err := h.git(fctx, gitcmd.Cmd{Args: []string{"symbolic-ref", "HEAD", "refs/heads/" + mf.Branch}, Finish: true}); err != nil {
			return err
		}
		if err := h.moveBranch(fctx, mf, target); err != nil {
			return err
		}
		err = h.finishRestore(mf, priv, swap)
		swap = nil
		return err
	}
	// On the head's own branch, git clean runs while the branch moves and
	// the index is swapped in (1-2 ms of a restore), reading the index
	// through a link of its own: the swap renames the private index away.
	// Should the clean fail, the head is at the target all the same, with
	// untracked files the clean did not remove.
	cleanIndex := filepath.Join(mf.Admin, cleanIndexName)
	_ = os.RemoveAll(cleanIndex) // whatever is there: a killed restore's link, or the agent's
	if err := os.Link(priv, cleanIndex); err != nil {
		return err
	}
	defer os.Remove(cleanIndex)
	cleaned := make(chan error, 1)
	go func() {
		err := clean(ctx, []string{"GIT_INDEX_FILE=" + cleanIndex})
		h.w.b.crashPoint("restore:cleaned")
		cleaned <- err
	}()
	err = h.moveBranch(fctx, mf, target)
	if err == nil {
		err = h.finishRestore(mf, priv, swap)
		swap = nil
	}
	if cerr := <-cleaned; err == nil {
		err = cerr
	}
	return err
}

// cleanIndexName is the link of the private index a restore's git clean
// reads, in the head's git dir.
const cleanIndexName = "grove-clean-index"

// moveBranch moves the head's own branch to target.
func (h *head) moveBranch(ctx context.Context, mf registry.Manifest, target string) error {
	return h.w.repo.UpdateRefs(ctx, []string{fmt.Sprintf("update refs/heads/%s %s", mf.Branch, target)})
}

// finishRestore ends a restore whose branch moved: it drops what a merge,
// cherry-pick or revert left in the head's git dir and swaps the index at
// priv in.
func (h *head) finishRestore(mf registry.Manifest, priv string, swap *indexSwap) error {
	for _, f := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "AUTO_MERGE", "CHERRY_PICK_HEAD", "REVERT_HEAD"} {
		_ = os.Remove(filepath.Join(mf.Admin, f))
	}
	return swap.commit(priv)
}

// resetDir is the scratch git dir resetFiles runs git reset in, in the
// head's git dir.
const resetDir = "grove-reset"

// resetFiles makes the tracked files and the index env names target's,
// as git reset --hard does, moving no ref: the reset runs with a scratch
// git dir whose HEAD is detached, so the HEAD it moves is grove's own, not
// the head's (whatever the agent made it name) nor any branch.
//
// Not git read-tree --reset -u, which does the same work but first drops
// the index's cache-tree: without it every tree of target is read (801 at
// 10,000 files), where reset reads only those of the directories whose
// trees differ (9), some 10 % of a restore's time. parallel lets the
// reset check out in parallel (see repo.manyFiles).
func (h *head) resetFiles(ctx context.Context, mf registry.Manifest, env []string, target string, parallel bool) error {
	dir := filepath.Join(mf.Admin, resetDir)
	args := []string{"-c", "core.logAllRefUpdates=false"}
	if mf.Sparse != nil {
		// The set is read from a git dir out of the agent's reach.
		sdir, sargs, cleanup, err := sparseGitDir(h.w.repo.Common, target, mf.Sparse)
		if err != nil {
			return err
		}
		defer cleanup()
		dir, args = sdir, sargs
	} else if err := scratchGitDir(dir, h.w.repo.Common, target); err != nil {
		return err
	}
	_, err := h.git(ctx, gitcmd.Cmd{GitDir: dir, Env: env, Args: append(args, "reset", "-q", "--hard", target), Parallel: parallel})
	return err
}

// scratchGitDir makes dir a git dir sharing the common dir common whose
// HEAD names no ref. It is kept from one restore to the next (its
// commondir written once, its HEAD left as the last reset there wrote
// it): HEAD is read as git would read it, and unless it is a regular file
// holding a commit ID, detached, it is replaced by one naming commit,
// through its lock file renamed in place (never written through whatever
// is there). Anything but a directory at dir, or a lock file a killed git
// (or the agent) left, is removed first.
func scratchGitDir(dir, common, commit string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
	}
	for _, name := range []string{"HEAD.lock", "ORIG_HEAD.lock", "commondir.lock"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if data, err := regfile.Read(filepath.Join(dir, "commondir"), 4096); err != nil || string(data) != common+"\n" {
		if err := writeThroughLock(filepath.Join(dir, "commondir"), []byte(common+"\n")); err != nil {
			return err
		}
	}
	if detachedHead(filepath.Join(dir, "HEAD")) {
		return nil
	}
	return writeThroughLock(filepath.Join(dir, "HEAD"), []byte(commit+"\n"))
}

// detachedHead reports whether the file at path, not followed if it is a
// symlink (git would take a symlink for a symbolic ref), is a regular file
// holding a full commit ID and a newline: a HEAD naming no ref. (The commit
// need not exist: git reset --hard then only leaves ORIG_HEAD unwritten.)
func detachedHead(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|regfile.ONoFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	var buf [64]byte
	n, _ := io.ReadFull(f, buf[:])
	return n == 41 && gitfmt.IsSHA1(string(buf[:40])) && buf[40] == '\n'
}

// diff returns what target adds to the index at priv (whose bytes are
// data, or nil: read them), whether it drops any path and whether a
// .gitignore differs (see diffIndex), and the index's marks (merr when
// they could not be read): in-process when the index's cache-tree and the
// target's trees tell (see diffTrees), else through git diff-index.
func (h *head) diff(ctx context.Context, priv string, data []byte, commit, target string) (adds []string, drops, rules bool, marks gitfmt.Marks, merr, err error) {
	if v, ok := gitfmt.ReadIndexView(priv, data); ok {
		if adds, drops, rules, ok = h.w.repo.DiffIndex(ctx, &v, target); ok {
			return adds, drops, rules, v.Marks, nil, nil
		}
	}
	if adds, drops, rules, err = h.diffIndex(ctx, priv, commit, target); err != nil {
		return nil, false, false, marks, nil, err
	}
	marks, merr = h.w.repo.Index.ReadMarks(priv)
	return adds, drops, rules, marks, merr, nil
}

// diffIndex returns what target adds to the index at priv (paths in
// target, not in the index), whether it drops any (in the index, not in
// target), and whether a .gitignore differs.
func (h *head) diffIndex(ctx context.Context, priv, commit, target string) (adds []string, drops, rules bool, err error) {
	var out string
	err = h.retryOnIndex(ctx, priv, commit, func() error {
		var err error
		out, err = h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"diff-index", "--cached", "--name-status", "--no-renames", "-z", target, "--"}})
		return err
	})
	if err != nil {
		return nil, false, false, err
	}
	adds, drops, rules = gitfmt.ParseDiffIndex(out)
	return adds, drops, rules, nil
}

// maxKeepArgs bounds the size of the patterns keepIgnored hands git clean.
const maxKeepArgs = 512 << 10

// keepIgnored returns git clean options (-e, whose patterns outrank every
// .gitignore, the target's negations included) naming exactly the paths
// ignored in the head now, an ignored directory as a whole. Too many to
// pass is FailedPrecondition, before anything changed.
func (h *head) keepIgnored(ctx context.Context, mf registry.Manifest, env []string) ([]string, error) {
	out, err := h.git(ctx, gitcmd.Cmd{Env: env, Args: []string{"ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory"}})
	if err != nil {
		return nil, err
	}
	var args []string
	size := 0
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		pat := literalPattern(p)
		if size += len(pat) + 4; size > maxKeepArgs {
			return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "gitbackend: restore", Head: mf.Name,
				Err: fmt.Errorf("the head holds more ignored paths than a restore can keep out of its clean (over %d bytes of names); ignore whole directories instead", maxKeepArgs)}
		}
		args = append(args, "-e", pat)
	}
	return args, nil
}

// literalPattern is a gitignore pattern matching the path p (relative to
// the top; a trailing slash for a directory): anchored, with every
// character a pattern gives meaning to escaped. A line break, which no
// pattern can hold, is matched by "?" (the pattern may then also keep
// a sibling whose name differs there: keeping more is safe).
func literalPattern(p string) string {
	dir := strings.HasSuffix(p, "/")
	p = strings.TrimSuffix(p, "/")
	var b strings.Builder
	b.WriteByte('/')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\', '*', '?', '[', ']':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n', '\r':
			b.WriteByte('?')
		case ' ':
			if strings.TrimRight(p[i:], " ") == "" {
				b.WriteString("\\ ") // a trailing blank would be dropped
			} else {
				b.WriteByte(' ')
			}
		default:
			b.WriteByte(c)
		}
	}
	if dir {
		b.WriteByte('/')
	}
	return b.String()
}

// blocker returns the first parent directory of p (slash-separated, under
// root) that is something else than a directory — a file or a symlink —
// or "" if there is none. Nothing is followed.
func blocker(root, p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p[:i])))
		if err != nil {
			return ""
		}
		if !fi.IsDir() {
			return p[:i]
		}
	}
	return ""
}

// checkIgnoredCollisions refuses with Conflict where target adds a path
// that is an ignored file in the head now with other content, or whose
// parent directory is an ignored file there. Only the paths target adds to
// the index are looked at, never the whole tree.
func (h *head) checkIgnoredCollisions(ctx context.Context, mf registry.Manifest, priv, target string, adds []string) error {
	var present, blockers []string
	for _, p := range adds {
		// A parent that is not a real directory (a file, or a symlink,
		// which git replaces and never writes through) blocks p; only a
		// path whose parents are all directories can be present.
		if b := blocker(mf.Dir, p); b != "" {
			blockers = append(blockers, b)
		} else if _, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(p))); err == nil {
			present = append(present, p)
		}
	}
	blockers = slices.Compact(blockers)
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
		return &grove.Error{Code: grove.Conflict, Op: "gitbackend: restore", Head: mf.Name, Path: p,
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
	// The paths are names, never patterns (a file may be named "*.log").
	listing, err := h.w.repo.Run(ctx, gitcmd.Cmd{Env: []string{"GIT_LITERAL_PATHSPECS=1"},
		Args: append([]string{"ls-tree", "-z", "--full-tree", target, "--"}, present...)})
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
	for _, p := range present {
		if got, err := gitfmt.BlobID(filepath.Join(mf.Dir, filepath.FromSlash(p)), len(want[p])); err != nil || got != want[p] {
			return conflict(p)
		}
	}
	return nil
}

// plan reads what restoring the head from commit (its index priv, read
// into data) to target does: whether it drops files from the index, and
// the ignored files git clean must keep. It refuses a restore that would
// write over an ignored file.
func (h *head) plan(ctx context.Context, mf registry.Manifest, priv string, data []byte, commit, target string) (drops bool, keep []string, err error) {
	// What target adds to the index (in target, not in the index) and
	// drops from it (in the index, not in target), and whether a
	// .gitignore differs.
	adds, drops, rules, marks, merr, err := h.diff(ctx, priv, data, commit, target)
	if err != nil {
		return false, nil, err
	}
	// What is ignored is asked of an index without the gitlinks: git
	// looks into a submodule's directory then, as capture does (and asked
	// about a path in one, it fails).
	ignoring := priv
	if len(marks.Gitlinks) > 0 {
		if data == nil {
			if data, err = h.w.repo.Index.ReadIndex(priv); err != nil {
				return false, nil, err
			}
			defer h.w.repo.Index.Put(data)
		}
		if ignoring, err = h.withoutGitlinks(ctx, priv+".plan", data, marks.Gitlinks); err != nil {
			return false, nil, err
		}
		defer os.Remove(ignoring)
	}
	if err := h.checkIgnoredCollisions(ctx, mf, ignoring, target, adds); err != nil {
		return false, nil, err
	}
	// What is ignored now stays ignored for git clean, whatever
	// ignore rules the target brings: a file ignored now is in no
	// checkpoint, and deleting it would lose it. The rules can differ only
	// if a .gitignore file differs between the head's files and the target
	// (untracked ones stay in place while git clean reads them); when none
	// does, the clean ignores exactly what is ignored now, and the listing
	// is not needed.
	if rules || merr != nil || ignoreFilesChanged(mf.Dir, marks) {
		if keep, err = h.keepIgnored(ctx, mf, []string{"GIT_INDEX_FILE=" + ignoring}); err != nil {
			return false, nil, err
		}
	}
	return drops, keep, nil
}
