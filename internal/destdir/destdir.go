// Package destdir prepares the destination of a Materialize: a directory
// that must be empty or absent, and is left as it was found if writing
// into it fails.
package destdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/groveworks/grove/backend"
)

// Prepare checks that dir is empty or absent and creates it. A non-empty
// or unreadable dir is FailedPrecondition and is not touched. undo removes
// what was written into dir since, and dir itself if Prepare created it.
func Prepare(op, dir string) (undo func(), err error) {
	existed := false
	if ents, err := os.ReadDir(dir); err == nil {
		if len(ents) > 0 {
			return nil, &backend.Error{Code: backend.FailedPrecondition, Op: op, Path: dir, Err: errors.New("destination is not empty")}
		}
		existed = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, &backend.Error{Code: backend.FailedPrecondition, Op: op, Path: dir, Err: err}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &backend.Error{Code: backend.Internal, Op: op, Path: dir, Err: err}
	}
	return func() {
		if !existed {
			_ = os.RemoveAll(dir)
			return
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}, nil
}
