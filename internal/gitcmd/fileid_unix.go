//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gitcmd

import (
	"fmt"
	"os"
	"syscall"
)

// fileID is a file's inode, device and change time: a binary replaced
// in place, whatever its size and modification time, has another.
func fileID(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return ""
	}
	return fmt.Sprintf("%d\x00%d\x00%d", st.Ino, st.Dev, changeTime(st))
}
