// On Linux renameat(2) comes from the syscall package.

package rootfs

import "syscall"

// renameat renames element oldname of the directory olddirfd holds to
// element newname of the directory newdirfd holds, following neither.
func renameat(olddirfd uintptr, oldname string, newdirfd uintptr, newname string) error {
	return syscall.Renameat(int(olddirfd), oldname, int(newdirfd), newname)
}
