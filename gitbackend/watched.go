package gitbackend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/changes"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// Watched heads (OpenOptions.WatchChanges). A head open in a workspace
// that watches holds an internal/changes watcher of its tree, started by
// its first whole Checkpoint or Status. What a whole checkpoint vouches
// for is kept (vouch): a Mark synced before it looked at any file, and
// the head's state key as it left it — its commit, its index file, the
// repository's info/exclude and info/attributes, the operation in
// progress. The next whole checkpoint whose state key is that one looks
// at the paths changed since the Mark alone (a checkpoint narrowed to
// them, which gives the tree a full one gives when they are every
// change), or at nothing when none changed. Status keeps its last answer
// the same way and gives it again while nothing changed.
//
// Anything else scans as an unwatched head does: the watcher's loss, a
// state key changed by anything but grove's checkpoint (git run in the
// head, a restore, an LFS fetch), a changed path that decides what other
// paths mean (decides), a changed file with other names (a write
// through one is reported under it alone), an operation in progress
// (whose checkpoints move neither HEAD nor the index), other checkpoint
// options, and heads the narrowed checkpoint does not serve: sealed
// (their commits come from a private git dir), sparse, attached, or with
// submodules. The state key is read after the checkpoint: a git command
// of the agent's that lands between grove's index swap and that read is
// taken as grove's, until the next full look.

// What a watched checkpoint or status looked at (seams.watchedLooks).
const (
	lookedAtNothing = iota
	lookedAtChanged
	lookedAtAll
)

// looked counts what a watched checkpoint, or status, looked at.
func (h *head) looked(status bool, what int) {
	i := 0
	if status {
		i = 1
	}
	h.w.b.seams.watchedLooks[i][what].Add(1)
}

// watchState is a head's watch: the watcher and what it vouches for.
type watchState struct {
	mu     sync.Mutex
	w      *changes.Watcher // nil until first use, or once it failed
	failed bool             // it could not start or broke: scan from now on
	cp     *vouch           // the last whole checkpoint's
	status *vouch           // the last full Status's
	// index is the head's index as the last narrowed checkpoint wrote
	// it, and indexKey the file's identity just after: the next
	// checkpoint takes it instead of reading and checking the file
	// again. An index an
	// agent rewrote in place with its size and time put back is not told
	// apart (nor is it by the state key): grove's copy is taken, and
	// written back as the head's index.
	index    []byte
	seal     *gitfmt.Sealer
	indexKey string
	// indexIno is the inode of the index file takeIndex last found to be
	// grove's; spare is that file, kept open under spareIndex once a
	// checkpoint replaced it, for the next one to write over: freeing a
	// replaced index's blocks and allocating a new file's cost more than
	// writing over pages already there (see the checkpoint-1-watched
	// row of grove bench).
	indexIno uint64
	spare    *os.File
}

// spareIndex is the name of a watched head's spare index file in its git
// dir.
const spareIndex = "grove-index-spare"

// keepSpare keeps the head's index at p, when it is still the file
// takeIndex found to be grove's, as the spare, before the caller replaces
// it: named spareIndex beside it, and open.
func (ws *watchState) keepSpare(p string) {
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.indexIno == 0 || ws.spare != nil {
		return
	}
	name := filepath.Join(filepath.Dir(p), spareIndex)
	_ = os.Remove(name)
	if os.Link(p, name) != nil {
		return
	}
	f, err := os.OpenFile(name, os.O_RDWR|regfile.ONoFollow, 0)
	if err != nil {
		_ = os.Remove(name)
		return
	}
	// The file opened is the one grove wrote, whatever happened to the
	// names: only its own file is ever written through the spare.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || regfile.Inode(fi) != ws.indexIno {
		_ = f.Close()
		_ = os.Remove(name)
		return
	}
	ws.spare = f
}

// writeSpare writes data, a whole index, at priv by writing over the
// spare file and renaming it there; ok is false when there is no spare,
// or writing or renaming it failed (priv is then not there).
func (ws *watchState) writeSpare(priv string, data []byte) (ok bool) {
	if ws == nil {
		return false
	}
	ws.mu.Lock()
	f := ws.spare
	ws.spare = nil
	ws.mu.Unlock()
	if f == nil {
		return false
	}
	defer f.Close()
	name := filepath.Join(filepath.Dir(priv), spareIndex)
	// An index file is written over only where no one can see it
	// change: not one with another name (a status poll's link, see
	// gitrepo.PolledIndex, or an agent's), and not one open or mapped
	// anywhere else (a git still reading it as the index it was).
	fi, err := f.Stat()
	if err != nil || regfile.Links(fi) != 1 {
		_ = os.Remove(name)
		return false
	}
	release, alone := openedAlone(f)
	if !alone {
		_ = os.Remove(name)
		return false
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	var after os.FileInfo
	if err == nil {
		after, err = f.Stat()
	}
	// Written in the same tick of a coarse clock, with the same size, it
	// would have its old identity (gitrepo.PolledIndex's key).
	if err == nil && after.ModTime().Equal(fi.ModTime()) && after.Size() == fi.Size() {
		err = os.ErrExist
	}
	if err == nil {
		err = os.Rename(name, priv)
	}
	release()
	if err != nil {
		_ = os.Remove(name)
		return false
	}
	// The name may have been swapped for another file on the way.
	if pi, err := os.Lstat(priv); err != nil || !os.SameFile(fi, pi) {
		_ = os.Remove(priv)
		return false
	}
	return true
}

// dropSpare closes the spare file and removes its name, while the name
// is still that file's.
func (ws *watchState) dropSpare(admin string) {
	ws.mu.Lock()
	f := ws.spare
	ws.spare = nil
	ws.mu.Unlock()
	if f == nil {
		return
	}
	name := filepath.Join(admin, spareIndex)
	if a, err := f.Stat(); err == nil {
		if b, err := os.Lstat(name); err == nil && os.SameFile(a, b) {
			_ = os.Remove(name)
		}
	}
	_ = f.Close()
}

// hasSpare reports whether the head keeps a spare index open.
func (ws *watchState) hasSpare() bool {
	if ws == nil {
		return false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.spare != nil
}

// indexKey names the index file fi describes by its identity (see
// regfile.FileKey; not its change time, which grove's own status polls
// move by linking the file).
func indexKey(fi fs.FileInfo) (string, bool) {
	if !fi.Mode().IsRegular() {
		return "", false
	}
	return regfile.FileKey(fi)
}

// takeIndex returns the kept bytes of the index at p and their Sealer,
// when p is still the file they were kept for (nil otherwise, or on an
// unwatched head), and keeps them no more: the caller owns them, as if
// read into the workspace's index buffer.
func (ws *watchState) takeIndex(p string) ([]byte, *gitfmt.Sealer) {
	if ws == nil {
		return nil, nil
	}
	fi, err := os.Lstat(p)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	data, seal, want := ws.index, ws.seal, ws.indexKey
	ws.index, ws.seal, ws.indexKey, ws.indexIno = nil, nil, "", 0
	if key, ok := indexKey(fi); err != nil || !ok || key != want {
		return nil, nil
	}
	ws.indexIno = regfile.Inode(fi)
	return data, seal
}

// keepIndex keeps data, which the caller wrote to the file whose inode
// is ino and made the head's index at p, and seal, which sealed them, for
// takeIndex; kept is false when it was not (an unwatched head, or the
// index is another file already), and the caller still owns data.
func (ws *watchState) keepIndex(p string, ino uint64, data []byte, seal *gitfmt.Sealer) (kept bool) {
	if ws == nil || data == nil || seal == nil {
		return false
	}
	fi, err := os.Lstat(p)
	if err != nil || regfile.Inode(fi) != ino {
		return false
	}
	key, ok := indexKey(fi)
	if !ok {
		return false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.index, ws.seal, ws.indexKey = data, seal, key
	return true
}

// vouch is what a full look at a head found, as of mark.
type vouch struct {
	mark   changes.Mark
	key    stateKey
	maxNew int64                  // the checkpoint's MaxNewFileSize
	cp     grove.CheckpointResult // the checkpoint, as a checkpoint with nothing to do returns it
	status grove.Status
}

// stateKey is what of a head, besides its files, decides what a
// checkpoint captures.
type stateKey struct {
	commit, index, exclude, attributes string
	op                                 grove.Operation
}

// maxWatchedPaths is the most changed paths a checkpoint looks at one by
// one: past it (a package manager's install, say), one scan of the whole
// tree costs less than asking git about each in turn.
const maxWatchedPaths = 2000

// watcher is the head's watcher, started now when it was not; nil when
// the head is not watched or cannot be.
func (h *head) watcher(mf registry.Manifest) *changes.Watcher {
	ws := h.watch
	if ws == nil || mf.Attached || mf.Sparse != nil || h.w.sealed() {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(mf.Dir, ".gitmodules")); err == nil {
		return nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.w == nil && !ws.failed {
		w, err := changes.New(mf.Dir)
		ws.w, ws.failed = w, err != nil
	}
	return ws.w
}

// stateKey reads the head's state key without a process; ok is false
// when it cannot be read so.
func (h *head) stateKey(mf registry.Manifest) (stateKey, bool) {
	commit, ref, ok := h.w.repo.HeadCommit(mf.Admin)
	if !ok || mf.Attached || mf.Branch == "" || ref != "refs/heads/"+mf.Branch {
		return stateKey{}, false
	}
	key := func(p string) string {
		fi, err := os.Lstat(p)
		if err != nil {
			return "-"
		}
		k, _ := regfile.FileKey(fi)
		return fi.Mode().Type().String() + k
	}
	return stateKey{
		commit:     commit,
		index:      key(filepath.Join(mf.Admin, "index")),
		exclude:    contentKey(filepath.Join(h.w.repo.Common, "info", "exclude")),
		attributes: contentKey(filepath.Join(h.w.repo.Common, "info", "attributes")),
		op:         inProgress(mf.Admin),
	}, true
}

// contentKey names what git reads at p, a small file of rules that git
// follows links to: its content, which no time put back hides.
func contentKey(p string) string {
	data, err := regfile.Read(p, 1<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "-"
	case err != nil:
		return "unreadable: " + err.Error() // scanned as git reads it; and again
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// decides reports whether a change of slash path p can change what other
// paths mean to a checkpoint: an ignore or attributes file, the
// submodules' list, a repository's .git.
func decides(p string) bool {
	switch path.Base(p) {
	case ".gitignore", ".gitattributes", ".gitmodules", ".lfsconfig":
		return true
	}
	return slices.Contains(strings.Split(p, "/"), ".git")
}

// changedSince is what the watcher vouches changed since v: ok is false
// when it cannot vouch (a loss, a deciding path, another state key).
func changedSince(w *changes.Watcher, v *vouch, key stateKey, keyOK bool) (paths []string, ok bool) {
	if v == nil || !keyOK || v.key != key || key.op != grove.OpNone || strings.HasPrefix(key.exclude+key.attributes, "unreadable") {
		return nil, false
	}
	paths, ok = w.Changed(v.mark)
	if !ok || slices.ContainsFunc(paths, decides) {
		return nil, false
	}
	return paths, true
}

// checkpointWatched is checkpoint on a watched head: callers hold the
// head lock.
func (h *head) checkpointWatched(ctx context.Context, mf registry.Manifest, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	w := h.watcher(mf)
	if w == nil || len(opts.Paths) > 0 {
		return h.checkpoint(ctx, mf, opts)
	}
	ws := h.watch
	ws.mu.Lock()
	last := ws.cp
	ws.cp = nil // until this checkpoint vouches again
	ws.mu.Unlock()
	if len(opts.Include) > 0 {
		h.looked(false, lookedAtAll)
		return h.checkpoint(ctx, mf, opts)
	}
	mark, err := w.Sync(ctx)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return grove.CheckpointResult{}, cerr
		}
		return h.checkpoint(ctx, mf, opts)
	}
	key, keyOK := h.stateKey(mf)
	paths, vouched := changedSince(w, last, key, keyOK)
	vouched = vouched && last.maxNew == opts.MaxNewFileSize && !opts.Scan && len(paths) <= maxWatchedPaths
	if vouched && len(paths) == 0 {
		h.looked(false, lookedAtNothing)
		last.mark = mark
		ws.setCheckpoint(last)
		return last.cp, nil
	}
	narrowed := *opts
	if vouched {
		narrowed.Paths, vouched = filesOf(mf.Dir, paths)
	}
	if vouched {
		h.looked(false, lookedAtChanged)
	} else {
		narrowed.Paths = nil
		h.looked(false, lookedAtAll)
	}
	res, err := h.checkpoint(ctx, mf, &narrowed)
	if err != nil {
		return res, err
	}
	if vouched {
		empty, err := h.emptyDirs(ctx, mf, paths)
		if err != nil {
			return res, err
		}
		res.Skipped = carrySkipped(last.cp.Skipped, paths, append(res.Skipped, empty...))
	}
	if key, ok := h.stateKey(mf); ok {
		same := res
		same.New = false
		ws.setCheckpoint(&vouch{mark: mark, key: key, maxNew: opts.MaxNewFileSize, cp: same})
		w.Forget(mark)
	}
	return res, nil
}

// setCheckpoint keeps v as the last checkpoint's vouch.
func (ws *watchState) setCheckpoint(v *vouch) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.cp = v
}

// filesOf is paths less the directories that are there now, and less
// what lies beyond a link; ok is false when a changed file has other
// names (a write through another is reported under that one alone): the watcher reports what changed inside a
// directory path by path (and a directory made or moved in whole, with
// everything in it), git would refuse a directory its rules ignore whose
// files it tracks, and a path beyond a link names no file of the head
// (the link, which replaced a directory, is among the paths itself).
// What is gone stays: it may have held tracked files. An empty directory
// is emptyDirs'.
func filesOf(dir string, paths []string) (files []string, ok bool) {
	kind := map[string]fs.FileMode{} // slash path -> its type; absent: gone
	linked := false                  // a changed file has other names
	lstat := func(p string) (fs.FileMode, bool) {
		if t, ok := kind[p]; ok {
			return t, true
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return 0, false
		}
		kind[p] = fi.Mode().Type()
		linked = linked || fi.Mode().IsRegular() && regfile.Links(fi) > 1
		return kind[p], true
	}
	beyondLink := func(p string) bool {
		for d := parentDir(p); d != ""; d = parentDir(d) {
			if t, ok := lstat(d); ok && t&fs.ModeSymlink != 0 {
				return true
			}
		}
		return false
	}
	files = make([]string, 0, len(paths))
	for _, p := range paths {
		if t, ok := lstat(p); (!ok || !t.IsDir()) && !beyondLink(p) {
			files = append(files, p)
		}
	}
	return files, !linked
}

// emptyDirs is what a whole checkpoint reports of the empty directories
// among paths and their parents: those git would list as untracked and
// not ignored.
func (h *head) emptyDirs(ctx context.Context, mf registry.Manifest, paths []string) ([]grove.Skipped, error) {
	var empty []string
	seen := map[string]bool{}
	for _, p := range paths {
		for d := p; d != "" && !seen[d]; d = parentDir(d) {
			seen[d] = true
			if ents, err := os.ReadDir(filepath.Join(mf.Dir, filepath.FromSlash(d))); err == nil && len(ents) == 0 {
				if fi, err := os.Lstat(filepath.Join(mf.Dir, filepath.FromSlash(d))); err == nil && fi.IsDir() {
					empty = append(empty, d)
				}
			}
		}
	}
	if len(empty) == 0 {
		return nil, nil
	}
	args := []string{"ls-files", "-z", "-o", "--directory", "--exclude-standard", "--"}
	for _, d := range empty {
		args = append(args, ":(literal)"+d)
	}
	out, err := h.git(ctx, gitcmd.Cmd{Args: args})
	if err != nil {
		return nil, err
	}
	var skipped []grove.Skipped
	for _, name := range strings.Split(out, "\x00") {
		if d, ok := strings.CutSuffix(name, "/"); ok && slices.Contains(empty, d) {
			skipped = append(skipped, grove.Skipped{Path: d, Reason: grove.SkipEmptyDirectory})
		}
	}
	return skipped, nil
}

// carrySkipped is what a whole checkpoint would have skipped: what the
// last one skipped outside paths (unchanged since), and now.
func carrySkipped(last []grove.Skipped, paths []string, now []grove.Skipped) []grove.Skipped {
	out := slices.Clone(now)
	for _, s := range last {
		if !slices.ContainsFunc(paths, func(p string) bool { return within(s.Path, p) || within(p, s.Path) }) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b grove.Skipped) int { return strings.Compare(a.Path, b.Path) })
	return slices.CompactFunc(out, func(a, b grove.Skipped) bool { return a.Path == b.Path })
}

// statusWatched is Status on a watched head: full is the full look.
func (h *head) statusWatched(ctx context.Context, mf registry.Manifest, full func() (grove.Status, error)) (grove.Status, error) {
	w := h.watcher(mf)
	if w == nil {
		return full()
	}
	mark, err := w.Sync(ctx)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return grove.Status{}, cerr
		}
		return full()
	}
	ws := h.watch
	key, keyOK := h.stateKey(mf)
	ws.mu.Lock()
	last := ws.status
	ws.mu.Unlock()
	if paths, ok := changedSince(w, last, key, keyOK); ok && len(paths) == 0 {
		h.looked(true, lookedAtNothing)
		st := cloneStatus(last.status)
		st.Archived = mf.State == grove.StateArchived
		return st, nil
	}
	h.looked(true, lookedAtAll)
	st, err := full()
	if err != nil || !keyOK {
		return st, err
	}
	if after, ok := h.stateKey(mf); ok && after == key {
		ws.mu.Lock()
		if ws.status == nil || ws.status.mark <= mark {
			ws.status = &vouch{mark: mark, key: key, status: cloneStatus(st)}
		}
		ws.mu.Unlock()
	}
	return st, nil
}

// cloneStatus is a copy of st sharing no slice with it.
func cloneStatus(st grove.Status) grove.Status {
	st.Changes, st.Conflicts, st.LFSMissing = slices.Clone(st.Changes), slices.Clone(st.Conflicts), slices.Clone(st.LFSMissing)
	subs := slices.Clone(st.Submodules)
	for i := range subs {
		subs[i].Changes = slices.Clone(subs[i].Changes)
	}
	st.Submodules = subs
	return st
}

// stopWatching closes the head's watcher, if it has one, and lets its
// spare index go.
func (h *head) stopWatching() {
	if ws := h.watch; ws != nil {
		ws.dropSpare(h.mf.Admin)
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if ws.w != nil {
			_ = ws.w.Close()
			ws.w, ws.failed = nil, true
		}
	}
}
