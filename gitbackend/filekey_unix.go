//go:build unix

package gitbackend

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileKey names the file fi describes by its inode, size and
// modification time (to the nanosecond). Not its change time: linking the
// file changes it.
func fileKey(fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%x-%x-%x", uint64(st.Ino), fi.Size(), fi.ModTime().UnixNano()), true
}
