// On Windows there is no O_NOFOLLOW: the directory is opened with
// FILE_FLAG_OPEN_REPARSE_POINT, so a symlink or junction that took its
// place is opened itself, never followed, and then refused.

package destdir

import (
	"errors"
	"os"
	"syscall"
)

// openDirNoFollow opens the directory dir for reading, refusing a symlink,
// a junction or anything else than a plain directory in its last element.
func openDirNoFollow(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.IsDir() || fi.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0 {
		_ = f.Close()
		return nil, &os.PathError{Op: "open", Path: dir, Err: errors.New("not a plain directory")}
	}
	return f, nil
}
