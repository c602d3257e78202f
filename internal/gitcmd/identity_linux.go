// On Linux a configuration file's signature holds its device, inode and
// change time (st_ctim) from the stat already made.

package gitcmd

import (
	"os"
	"syscall"
)

// identity returns the device, inode and change time of the file at path,
// which fi describes.
func identity(_ string, fi os.FileInfo) (dev, ino uint64, ctime syscall.Timespec) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino, st.Ctim
	}
	return 0, 0, syscall.Timespec{}
}
