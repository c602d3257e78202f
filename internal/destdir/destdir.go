// Package destdir prepares the destination of a Materialize: a directory
// that must be empty or absent, and is left as it was found if writing
// into it fails.
package destdir

import (
	"errors"
	"io/fs"
	"os"

	"github.com/groveworks/grove"
)

// Prepare checks that dir is empty or absent and creates it. A non-empty
// or unreadable dir is FailedPrecondition and is not touched. undo removes
// what was written into dir since, and dir itself if Prepare created it.
func Prepare(op, dir string) (undo func(), err error) {
	existed := false
	if ents, err := os.ReadDir(dir); err == nil {
		if len(ents) > 0 {
			return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: dir, Err: errors.New("destination is not empty")}
		}
		existed = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: dir, Err: err}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: op, Path: dir, Err: err}
	}
	return func() {
		if !empty(dir) {
			return
		}
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && !existed {
			_ = os.Remove(dir) // empty now (os.Remove never follows a symlink)
		}
	}, nil
}

// empty removes everything in dir and reports whether dir could be opened
// to do so. The directory is opened without following a symlink that took
// its place, and emptied through that handle: nothing is ever removed
// through a symlink, whatever is swapped in meanwhile. Its handles are
// closed on return (Windows cannot remove a directory held open).
func empty(dir string) bool {
	f, err := openDirNoFollow(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	root, err := rootOf(f, dir)
	if err != nil {
		return false
	}
	defer root.Close()
	ents, _ := f.ReadDir(-1)
	for _, e := range ents {
		_ = root.RemoveAll(e.Name())
	}
	return true
}
