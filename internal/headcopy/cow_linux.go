package headcopy

import (
	"errors"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Btrfs ioctls a snapshot needs (linux/btrfs.h): each takes a 4,096
// byte argument with the source's descriptor and the new name.
const (
	btrfsSubvolCreate  = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	btrfsSnapCreateV2  = 0x50009417 // _IOW(0x94, 23, struct btrfs_ioctl_vol_args_v2)
	btrfsSubvolNameMax = 4039
)

type btrfsVolArgs struct {
	fd   int64
	name [4088]byte
}

type btrfsVolArgsV2 struct {
	fd      int64
	transid uint64
	flags   uint64
	unused  [4]uint64
	name    [btrfsSubvolNameMax + 1]byte
}

// Probe says what the file system of dir (a directory) offers. A Btrfs
// snapshot needs nothing but Btrfs; a reflink is tried on two files made
// and removed in dir.
func Probe(dir string) CoW {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return NoCoW
	}
	if fs.Type == unix.BTRFS_SUPER_MAGIC {
		return Snapshot
	}
	a, err := os.CreateTemp(dir, ".grove-probe-*")
	if err != nil {
		return NoCoW
	}
	defer os.Remove(a.Name())
	defer a.Close()
	b, err := os.CreateTemp(dir, ".grove-probe-*")
	if err != nil {
		return NoCoW
	}
	defer os.Remove(b.Name())
	defer b.Close()
	if _, err := a.Write([]byte("grove")); err != nil || !CloneFile(b, a) {
		return NoCoW
	}
	return Reflink
}

// MakeTree makes the empty directory path, to be filled and then
// snapshotted: for Snapshot a Btrfs subvolume, else a directory.
func MakeTree(path string, c CoW) error {
	if c != Snapshot {
		return os.Mkdir(path, 0o755)
	}
	return btrfsIoctl(filepath.Dir(path), btrfsSubvolCreate, func(name []byte) unsafe.Pointer {
		var args btrfsVolArgs
		copy(args.name[:], name)
		return unsafe.Pointer(&args)
	}, filepath.Base(path))
}

// SnapshotTree makes dst, which must not exist, a Btrfs snapshot of the
// subvolume src (made by MakeTree): every file, link, mode and time of
// src, sharing all their blocks, in a time that does not grow with the
// number of files.
func SnapshotTree(src, dst string) error {
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return btrfsIoctl(filepath.Dir(dst), btrfsSnapCreateV2, func(name []byte) unsafe.Pointer {
		args := btrfsVolArgsV2{fd: int64(fd)}
		copy(args.name[:], name)
		return unsafe.Pointer(&args)
	}, filepath.Base(dst))
}

// btrfsIoctl calls the ioctl req on the directory parent with the
// argument build makes for name.
func btrfsIoctl(parent string, req uint, build func(name []byte) unsafe.Pointer, name string) error {
	if len(name) == 0 || len(name) > btrfsSubvolNameMax {
		return errors.New("headcopy: bad subvolume name")
	}
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	arg := build([]byte(name))
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(pfd), uintptr(req), uintptr(arg)); errno != 0 {
		return &os.PathError{Op: "btrfs ioctl", Path: filepath.Join(parent, name), Err: errno}
	}
	return nil
}
