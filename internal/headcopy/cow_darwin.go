package headcopy

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Probe says what the file system of dir offers: APFS clones a whole
// tree at once (clonefile).
func Probe(dir string) CoW {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return NoCoW
	}
	name := unsafe.Slice((*byte)(unsafe.Pointer(&fs.Fstypename[0])), len(fs.Fstypename))
	if n := indexZero(name); string(name[:n]) == "apfs" {
		return Snapshot
	}
	return NoCoW
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return len(b)
}

// MakeTree makes the empty directory path, to be filled and then
// snapshotted.
func MakeTree(path string, _ CoW) error { return os.Mkdir(path, 0o755) }

// SnapshotTree makes dst, which must not exist, a clone of the tree src
// (clonefile: every file sharing its blocks, links not followed).
func SnapshotTree(src, dst string) error {
	if err := unix.Clonefile(src, dst, unix.CLONE_NOFOLLOW); err != nil {
		return &os.PathError{Op: "clonefile", Path: dst, Err: err}
	}
	return nil
}
