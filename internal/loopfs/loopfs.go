//go:build linux

// Package loopfs gives tests a file system of a kind the machine's own
// disk is not: an image file made, formatted and loop-mounted for the
// test, unmounted and deleted after it. It needs root, losetup's kernel
// support and the file system's mkfs (Debian's btrfs-progs, xfsprogs),
// which .ci/run installs.
package loopfs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Size is the image's size: sparse, so only what is written takes disk.
const Size = 1 << 30

// Mount makes an image of fstype ("btrfs", "xfs" with reflinks, "ext4")
// and mounts it at a new directory, which it returns. The test fails,
// saying what is missing, where that cannot be done.
func Mount(t testing.TB, fstype string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("loopfs: a %s image is mounted by root alone: run the tests as root (as .ci/run does)", fstype)
	}
	mkfs := map[string][]string{
		"btrfs": {"mkfs.btrfs", "-q"},
		"xfs":   {"mkfs.xfs", "-q", "-m", "reflink=1"},
		"ext4":  {"mkfs.ext4", "-q"},
	}[fstype]
	if mkfs == nil {
		t.Fatalf("loopfs: no image of %q", fstype)
	}
	if _, err := exec.LookPath(mkfs[0]); err != nil {
		t.Fatalf("loopfs: %s is not installed (Debian's btrfs-progs and xfsprogs; .ci/run installs them)", mkfs[0])
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, fstype+".img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err == nil {
		err = f.Truncate(Size)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	run(t, append(mkfs, img)...)
	run(t, "mount", "-o", "loop", img, mnt)
	t.Cleanup(func() {
		// A process a test left in the tree can hold it a moment.
		for i := 0; ; i++ {
			out, err := exec.Command("umount", mnt).CombinedOutput()
			if err == nil {
				return
			}
			if i == 50 {
				_ = exec.Command("umount", "-l", mnt).Run()
				t.Errorf("loopfs: umount %s: %v: %s", mnt, err, out)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return mnt
}

func run(t testing.TB, argv ...string) {
	t.Helper()
	var out bytes.Buffer
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		t.Fatalf("loopfs: %v: %v: %s", argv, err, out.String())
	}
}
