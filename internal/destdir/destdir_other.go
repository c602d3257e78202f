//go:build !linux

// Outside Linux there is no /proc/self/fd to open a root on a descriptor:
// the root is opened on dir's path and kept only if it is the very
// directory f holds (same device and inode, or volume and file ID on
// Windows). A directory swapped in meanwhile, or a symlink to one, is
// refused rather than emptied; the comparison is between two open handles,
// so nothing can change in between.

package destdir

import (
	"errors"
	"os"
)

// rootOf returns an os.Root on the directory f holds, opened from dir.
func rootOf(f *os.File, dir string) (*os.Root, error) {
	want, err := f.Stat()
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d, err := root.Open(".")
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	got, err := d.Stat()
	_ = d.Close()
	if err != nil {
		_ = root.Close()
		return nil, err
	}
	if !os.SameFile(want, got) {
		_ = root.Close()
		return nil, errors.New("destdir: the directory was replaced while it was being emptied")
	}
	return root, nil
}
