//go:build unix && !linux

// On Unix systems other than Linux (macOS, the BSDs) the syscall package
// has no Renameat: renameat(2) comes from golang.org/x/sys/unix.

package rootfs

import "golang.org/x/sys/unix"

// renameat renames element oldname of the directory olddirfd holds to
// element newname of the directory newdirfd holds, following neither.
func renameat(olddirfd uintptr, oldname string, newdirfd uintptr, newname string) error {
	return unix.Renameat(int(olddirfd), oldname, int(newdirfd), newname)
}
