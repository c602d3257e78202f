package bench

import "golang.org/x/sys/unix"

// fsName names the file system dir is on.
func fsName(dir string) string {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return "unknown"
	}
	switch fs.Type {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	}
	return "unknown"
}
