package gitbackend

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/regfile"
	"github.com/groveworks/grove/internal/registry"
)

// A new head whose commit another head of the workspace holds — a fork,
// whose source has just checkpointed; a head made from the same commit as
// a clean one — gets its files copied from that head's working tree
// (package headcopy) rather than checked out of the object store again.
// git reads the new head's index from the commit while the files are
// copied; headcopy.Stamp gives each copy that is its entry's blob its
// stat data. Whatever was not copied is left to the checkout that
// follows (populate's read-tree --reset -u), which also looks at every
// file again; when every entry was copied, git's diff-files looks at
// every file instead, and the checkout runs only if it finds one that
// differs.

// fromDiskMin is the number of files below which a new head is checked out
// rather than copied: a small checkout costs less than the copy's extra
// git process (diff-files); grove bench's fork and create measure both. The
// tests lower it through the Backend's seams.
const fromDiskMin = 200

// copyFromDisk fills the new head mf (registered, its files not yet
// written, its head lock held) from another head of the workspace whose
// index is at the same tree, if there is one, and reports whether it
// copied every entry of the index. Its only error is a cancelled ctx:
// anything else leaves the rest to the checkout that follows.
//
// The source's index says which files to copy, while git reads the new
// head's index from the commit beside the copy; only then is each copy
// matched with the entry git wrote for its path. The source's index is
// a hint, which its agent can write: a copy whose path, mode or blob is
// not its entry's gets no stat data (the checkout rewrites it), and if
// the hint named a path the commit does not have, everything copied is
// removed again and the checkout does it all.
func (w *workspace) copyFromDisk(ctx context.Context, mf *registry.Manifest) (all bool, err error) {
	if !headcopy.Works {
		return false, nil
	}
	commit := string(mf.Base)
	tree, hashLen, ok := w.commitTree(ctx, commit)
	if !ok {
		return false, ctxErr(ctx)
	}
	src, files := w.headAtTree(mf, tree, hashLen)
	least := fromDiskMin
	if w.b.seams.fromDiskMin > 0 {
		least = w.b.seams.fromDiskMin
	}
	if src == "" || len(files) < least {
		return false, nil // nothing to copy from, or a checkout costs less
	}
	// The new head's index, read from the commit by git while the files
	// are copied: the entries the copy must produce, none yet with stat
	// data.
	readTree := make(chan error, 1)
	go func() {
		_, err := w.repo.Run(ctx, gitcmd.Cmd{GitDir: mf.Admin, CommonDir: w.repo.Common, WorkTree: mf.Dir, Dir: mf.Dir,
			Args: []string{"read-tree", commit}})
		readTree <- err
	}()
	n, cerr := headcopy.Files(ctx, src, mf.Dir, files, hashLen)
	w.b.seams.diskCopies.Add(n)
	if err := <-readTree; err != nil || cerr != nil {
		return false, ctxErr(ctx)
	}
	index := filepath.Join(mf.Admin, "index")
	data, err := regfile.Read(index, gitfmt.MaxIndexFile)
	if err != nil || gitfmt.CheckIndex(data) != nil {
		return false, nil
	}
	matched, entries, ok := headcopy.Stamp(data, hashLen, files)
	if !ok {
		return false, clearDir(ctx, mf.Dir)
	}
	if err := writeThroughLock(index, data); err != nil {
		return false, ctxErr(ctx)
	}
	return matched == entries, ctxErr(ctx)
}

// clearDir removes everything under a new head's directory dir but its
// .git file, which git worktree add wrote; the error is only ctx's end.
func clearDir(ctx context.Context, dir string) error {
	ents, err := os.ReadDir(dir)
	if err == nil {
		for _, e := range ents {
			if e.Name() != ".git" {
				_ = os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	return ctxErr(ctx)
}

// ctxErr is nil, or the cancellation of ctx as a create reports it.
func ctxErr(ctx context.Context) error { return grove.ContextError(ctx, "gitbackend: create head") }

// headAtTree returns the directory of a live head of the workspace other
// than mf whose HEAD is a commit of tree and whose index records tree as
// its entries' (its cache-tree: what a checkpoint leaves), and the files
// that index lists for a copy (see copyList), read in the same pass; or
// "". Only the indexes of heads at that commit's tree are read, and only
// as a hint: nothing copied from the head is taken on its word.
func (w *workspace) headAtTree(mf *registry.Manifest, tree string, hashLen int) (dir string, files []headcopy.Entry) {
	all, err := w.meta.Manifests()
	if err != nil {
		return "", nil
	}
	for _, o := range all {
		if o.ID == mf.ID || !o.Live() || o.Creating || o.Admin == "" || o.Dir == "" {
			continue
		}
		if commit, _, ok := w.repo.HeadCommit(o.Admin); !ok {
			continue
		} else if commit != string(mf.Base) {
			if t, ok := w.repo.CommitTree(commit); !ok || t != tree {
				continue
			}
		}
		data, err := regfile.Read(filepath.Join(o.Admin, "index"), gitfmt.MaxIndexFile)
		if err != nil {
			continue
		}
		var l headcopy.List
		if marks, _, ok := gitfmt.WalkMarks(data, hashLen, l.Add); ok && marks.Tree == tree {
			if files, sorted := l.Entries(); sorted {
				return o.Dir, files
			}
		}
	}
	return "", nil
}

// writeThroughLock replaces the file at path with data through its lock
// file (path.lock, which must not exist), as git does: never written
// through whatever is at path. Not synced.
func writeThroughLock(path string, data []byte) error {
	return replaceThroughLock(path, time.Time{}, func() ([]byte, error) { return data, nil })
}

// replaceThroughLock is writeThroughLock with the content made by build
// while the lock is held (an error from build leaves path as it was),
// and the new file stamped mtime unless it is zero.
func replaceThroughLock(path string, mtime time.Time, build func() ([]byte, error)) error {
	return replaceThroughLockFile(path, func(f *os.File) error {
		data, err := build()
		if err == nil {
			_, err = f.Write(data)
		}
		if err == nil && !mtime.IsZero() {
			err = os.Chtimes(f.Name(), mtime, mtime)
		}
		return err
	})
}

// replaceThroughLockFile replaces the file at path with what fill writes
// into its lock file (path.lock, which must not exist); an error from
// fill leaves path as it was.
func replaceThroughLockFile(path string, fill func(f *os.File) error) error {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		_ = os.Remove(lock)
	}
	return err
}
