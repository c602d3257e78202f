package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/sparse"
)

// seedIndex copies the head's index to a private index in its git dir, so
// that git's stat cache stays warm. A head index that fails its checksum
// (git itself does not check it when it reads an index, and writes the
// trees of a garbled one as they are: unsorted, corrupt) is not used: the
// private index is read from commit instead. It returns the private
// index's path and, when they are the head's index, its bytes as checked
// (nil when it was read from commit, or there was none, or with an
// error), in the kept index buffer: the caller hands them back with
// h.w.repo.index.Put, once, when nothing refers to them any more.
func (h *head) seedIndex(ctx context.Context, mf registry.Manifest, name, commit string) (string, []byte, error) {
	priv := filepath.Join(mf.Admin, name)
	_ = os.Remove(priv)
	data, _, mtime, err := h.headIndex(mf)
	data, err = h.writeSeed(ctx, priv, data, mtime, err, commit)
	return priv, data, err
}

// headIndex reads the head's index as seedIndex copies it: its bytes,
// checked (nil when there is none), the Sealer that reseals them, and its
// modification time. A watched head's are the copy kept by the last
// checkpoint that wrote them (see keepIndex), while the file is still the
// one it wrote.
func (h *head) headIndex(mf registry.Manifest) ([]byte, *gitfmt.Sealer, time.Time, error) {
	src := filepath.Join(mf.Admin, "index")
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, new(gitfmt.Sealer), time.Time{}, nil // git starts an empty index
	}
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	if data, seal := h.watch.takeIndex(src); data != nil {
		return data, seal, st.ModTime(), nil
	}
	data, err := h.w.repo.Index.ReadIndex(src)
	return data, new(gitfmt.Sealer), st.ModTime(), err
}

// writeSeed writes data, the head's index as headIndex read it (or failed
// to, with err), at the private index priv, stamped mtime; with an error
// the bytes go back to the buffer and nil is returned, and an index too
// damaged to copy is rebuilt from commit instead.
func (h *head) writeSeed(ctx context.Context, priv string, data []byte, mtime time.Time, err error, commit string) ([]byte, error) {
	if err == nil && data != nil {
		err = writeIndexCopy(priv, data, mtime)
	}
	if err != nil {
		h.w.repo.Index.Put(data)
		data = nil
	}
	if errors.Is(err, gitfmt.ErrDamagedIndex) {
		err = h.rebuildIndex(ctx, priv, commit)
	}
	return data, err
}

// rebuildIndex replaces the private index priv with one read from commit,
// for when the head's own index cannot be used (garbled, truncated, or
// naming what git cannot read): git's stat cache is cold afterwards, so the
// next command compares content, and a checkpoint captures the working
// tree as always.
func (h *head) rebuildIndex(ctx context.Context, priv, commit string) error {
	_ = os.Remove(priv)
	_ = os.Remove(priv + ".lock")
	_, err := h.git(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + priv}, Args: []string{"read-tree", commit}})
	return err
}

// retryOnIndex runs fn on priv and, if it fails for any reason but
// cancellation or a typed refusal, rebuilds priv from commit and runs fn
// once more: a damaged index is repaired, never a dead end, and any other
// failure is reported by the second run.
func (h *head) retryOnIndex(ctx context.Context, priv, commit string, fn func() error) error {
	err := fn()
	if err == nil || grove.CodeOf(err) != grove.Internal || commit == "" {
		return err
	}
	if rerr := h.rebuildIndex(ctx, priv, commit); rerr != nil {
		return err
	}
	return fn()
}

// copyIndex copies an index file keeping its modification time: git
// trusts an entry's cached stat data only if the file changed before the
// index was written, so a copy stamped "now" would hide a same-size edit
// made in the second the index was written ("racy git"). It returns the
// bytes copied, which passed checkIndex, read as readIndex reads them
// (they go back with putIndexBuf, also with an error). (A hard link would
// cost no write, and git never writes an index in place — but an agent,
// or another tool, can, and grove's own copy must hold what grove
// checked.)
func copyIndex(buf *gitfmt.Buffer, src, dst string) ([]byte, error) {
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // git starts an empty index
	}
	if err != nil {
		return nil, err
	}
	data, err := buf.ReadIndex(src)
	if err != nil {
		return data, err
	}
	return data, writeIndexCopy(dst, data, st.ModTime())
}

// writeIndexCopy writes data at dst, a new file (never through a link an
// agent planted there since the caller removed it), stamped mtime, or
// now when it is zero.
func writeIndexCopy(dst string, data []byte, mtime time.Time) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|regfile.ONoFollow, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !mtime.IsZero() {
		err = os.Chtimes(dst, mtime, mtime)
	}
	return err
}

// unmark makes git add see every entry of the index at priv as it is in
// the working tree. It removes every gitlink entry (a submodule's, a
// nested repository's an agent staged with git add): git add would run
// git status inside each repository it found there, with that
// repository's own configuration (a filter it names would run), and keep
// its files out of the checkpoint; without the entry, the directory is
// untracked, and capture adds what it holds as files. It returns those
// whose directory is there (or outside a sparse head's set), by path with
// their commits, for keepGitlinks to put back, once no git add runs any
// more, where nothing was added; a gitlink whose directory is gone is a
// deletion. It
// clears the assume-unchanged and skip-worktree marks, behind which git
// add would not see an edit, and a checkpoint would silently miss it; in
// a sparse head, see markSparse: it returns the blockers that checkpoint
// skips.
//
// seeded, when not nil, is priv's content, read and checked as it was
// copied: its marks are parsed from it instead of reading priv again.
//
// The gitlinks of keep (checked-out submodules, which capture commits
// itself) are left in the index and out of gitlinks.
func (h *head) unmark(ctx context.Context, t worktree, priv string, seeded []byte, keep map[string]string) (blockers []string, gitlinks map[string]string, err error) {
	data := seeded
	if data == nil {
		if data, err = h.w.repo.Index.ReadIndex(priv); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		} else if err != nil {
			return nil, nil, err
		}
		defer h.w.repo.Index.Put(data)
	}
	marks, err := gitfmt.MarksOf(data)
	if err != nil {
		return nil, nil, err
	}
	skipped := marks.Skipped
	mf := h.manifest()
	if t.top && mf.Sparse != nil {
		skipped = nil // see markSparse
		m, err := markSparse(ctx, h.git, mf, priv, data, false)
		if err != nil {
			return nil, nil, err
		}
		blockers = m.blockers
	}
	remove := marks.Gitlinks
	if len(keep) > 0 {
		remove = slices.DeleteFunc(slices.Clone(remove), func(p string) bool { _, ok := keep[p]; return ok })
	}
	for i, p := range marks.Gitlinks {
		if _, ok := keep[p]; ok {
			continue
		}
		fi, err := os.Lstat(filepath.Join(t.dir, filepath.FromSlash(p)))
		if err == nil && fi.IsDir() || t.top && !sparse.Set(mf.Sparse).Contains(p) {
			if gitlinks == nil {
				gitlinks = map[string]string{}
			}
			gitlinks[p] = marks.GitlinkIDs[i]
		}
	}
	return blockers, gitlinks, updateIndex(ctx, t.git, priv, []indexStep{{remove, "--force-remove"}, {marks.Assumed, "--no-assume-unchanged"}, {skipped, "--no-skip-worktree"}})
}

// keepGitlinks puts back, in the index env names, each gitlink unmark took
// out under which the add found nothing to capture (an empty submodule
// directory, or one holding ignored files or empty directories alone):
// the checkpoint records the submodule's commit, as before. The others
// leave gitlinks, which then holds the gitlinks kept.
func keepGitlinks(ctx context.Context, git func(context.Context, gitcmd.Cmd) (string, error), env []string, gitlinks map[string]string) error {
	if len(gitlinks) == 0 {
		return nil
	}
	args := []string{"ls-files", "-z", "--"}
	for p := range gitlinks {
		args = append(args, ":(literal)"+p)
	}
	out, err := git(ctx, gitcmd.Cmd{Env: env, Args: args})
	if err != nil {
		return err
	}
	for _, e := range strings.Split(out, "\x00") {
		for p := range gitlinks {
			if e == p || strings.HasPrefix(e, p+"/") {
				delete(gitlinks, p) // captured as what it holds now
			}
		}
	}
	return setGitlinks(ctx, git, env, gitlinks)
}

// indexStep is one git update-index over paths, with flag.
type indexStep struct {
	paths []string
	flag  string
}

// updateIndex runs the steps with paths on the index at index, in order,
// through run (a head's git, or a command of the workspace's aimed at the
// index's worktree).
func updateIndex(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), index string, steps []indexStep) error {
	for _, step := range steps {
		if len(step.paths) == 0 {
			continue
		}
		if _, err := run(ctx, gitcmd.Cmd{Env: []string{"GIT_INDEX_FILE=" + index}, Stdin: strings.NewReader(strings.Join(step.paths, "\x00") + "\x00"),
			Args: []string{"update-index", step.flag, "-z", "--stdin"}}); err != nil {
			return err
		}
	}
	return nil
}

// ignoreFilesChanged reports whether a .gitignore file the index tracks
// (its marks) differs in the working tree at dir from what the index
// records (edited, removed, replaced): the ignore rules the head's files
// give are then not the index's.
func ignoreFilesChanged(dir string, marks gitfmt.Marks) bool {
	for _, e := range marks.IgnoreFiles {
		full := filepath.Join(dir, filepath.FromSlash(e.Path))
		fi, err := os.Lstat(full)
		if err != nil || (e.Mode&0o170000 == 0o120000) != (fi.Mode()&fs.ModeSymlink != 0) {
			return true
		}
		if got, err := gitfmt.BlobID(full, len(e.OID)); err != nil || got != e.OID {
			return true
		}
	}
	return false
}

// indexSwap is the head's index.lock, held by grove: git's own lock
// protocol, so a concurrent git command sees the old index or the new one,
// never a mix, and no git command changes the index meanwhile.
type indexSwap struct {
	lockPath, index string
}

// lockIndex takes the head's index.lock. With priv set it is taken by
// hard-linking the private index as the lock, so the lock already holds
// the final content, and a lock a killed grove left behind is recognized as
// the private index's inode; with priv empty it is created empty, and the
// caller holds an operation marker (see mark) that makes it recognizable.
//
// A lock held by a git command outside grove is waited for at most the
// backend's LockWait (and never past ctx), then the operation fails with
// Busy naming the lock file, having changed nothing.
func (h *head) lockIndex(ctx context.Context, mf registry.Manifest, priv string) (*indexSwap, error) {
	s := &indexSwap{lockPath: filepath.Join(mf.Admin, indexLock), index: filepath.Join(mf.Admin, "index")}
	take := func() error {
		if priv != "" {
			return os.Link(priv, s.lockPath)
		}
		f, err := os.OpenFile(s.lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			err = f.Close()
		}
		return err
	}
	wait := h.w.b.lockWait()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	delay := time.Millisecond
	for {
		err := take()
		if err == nil {
			h.w.b.crashPoint("index:locked")
			return s, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// index.lock is held by a git command: wait for it, a while.
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &grove.Error{Code: grove.Canceled, Op: "gitbackend: index lock", Head: mf.Name, Path: s.lockPath,
				Err: fmt.Errorf("waiting for %s, held by a git command: %w", s.lockPath, ctx.Err())}
		case <-deadline.C:
			t.Stop()
			return nil, &grove.Error{Code: grove.Busy, Op: "gitbackend: index lock", Head: mf.Name, Path: s.lockPath,
				Err: fmt.Errorf("%s is held by a git command outside grove (waited %s); it is removed by that command when it ends, or by hand if that command died", s.lockPath, wait)}
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// commit makes priv the head's index and releases the lock: priv is
// renamed over the lock (unless the lock is already priv's hard link),
// then the lock over the index.
func (s *indexSwap) commit(priv string) error {
	a, err1 := os.Lstat(priv)
	b, err2 := os.Lstat(s.lockPath)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		if err := os.Rename(priv, s.lockPath); err != nil {
			_ = os.Remove(s.lockPath)
			return err
		}
	}
	if err := os.Rename(s.lockPath, s.index); err != nil {
		_ = os.Remove(s.lockPath)
		return err
	}
	_ = os.Remove(priv)
	return nil
}

// abort releases the lock, leaving the index as it was.
func (s *indexSwap) abort() { _ = os.Remove(s.lockPath) }

// swapIndex makes the private index the head's index.
func (h *head) swapIndex(ctx context.Context, mf registry.Manifest, priv string) error {
	s, err := h.lockIndex(ctx, mf, priv)
	if err != nil {
		return err
	}
	return s.commit(priv)
}
