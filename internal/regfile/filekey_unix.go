//go:build unix

package regfile

import (
	"fmt"
	"io/fs"
	"syscall"
)

// FileKey names the file fi describes by its inode, size and
// modification time (to the nanosecond). Not its change time: linking the
// file changes it.
func FileKey(fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%x-%x-%x", uint64(st.Ino), fi.Size(), fi.ModTime().UnixNano()), true
}

// Inode is the inode number of the file fi describes.
func Inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// Allocated is how many bytes of disk the file fi describes holds.
func Allocated(fi fs.FileInfo) (int64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}

// Links is how many names the file fi describes has.
func Links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
