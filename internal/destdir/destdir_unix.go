//go:build unix

// On Unix the directory is opened with O_DIRECTORY|O_NOFOLLOW: the kernel
// refuses a symlink that took its place.

package destdir

import (
	"os"
	"syscall"
)

// openDirNoFollow opens the directory dir for reading, refusing a symlink
// or anything else than a directory in its last element.
func openDirNoFollow(dir string) (*os.File, error) {
	return os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}
