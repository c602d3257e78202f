package headcopy

import (
	"bytes"
	"context"
	"hash"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/groveworks/grove/internal/gitfmt"
	"golang.org/x/sys/unix"
)

// Works says whether Files copies here.
const Works = true

// copyWorkers is how many files the copy works on at once. The work is
// mostly waiting: where the source's files have left the page cache, each
// file is two small random reads (its inode, its block), and a disk
// serves many such reads at once about as fast as one. (Reading 100,000
// small files whose pages had been dropped took 8-16 s with 2 readers
// and 6-8 s with 8 to 128, on a 2-core VM; with the pages cached, 16
// readers were no slower than 2.)
const copyWorkers = 16

// copyChunk is how many files a copy worker takes at a time: neighbours
// in the index share directories, whose descriptors a worker keeps open.
const copyChunk = 256

// Files copies files (sorted as the index sorts them) from the tree at
// src to the tree at dst, marking each file it copied as copied, with its
// copy's stat data, and returns how many it copied. Of
// errors it reports only ctx's end: a file that cannot be copied, or
// whose content is not its blob, is skipped. Nothing is followed: both
// trees are walked one directory at a time, refusing symlinks and other
// file systems' mounts, and a file is copied from what was opened.
func Files(ctx context.Context, src, dst string, files []Entry, hashLen int) (copied int64, err error) {
	return copyFiles(ctx, src, dst, files, hashLen, false)
}

// CloneFiles is Files from a tree grove made itself and no agent holds (a
// seed): a file whose stat data is still what its entry recorded
// (List.AddRecorded) is cloned (FICLONE), or skipped when it cannot be,
// and not read back; any other is copied and checked as Files does, so a
// seed changed since its index was written gives no head its change.
func CloneFiles(ctx context.Context, src, dst string, files []Entry, hashLen int) (copied int64, err error) {
	return copyFiles(ctx, src, dst, files, hashLen, true)
}

func copyFiles(ctx context.Context, src, dst string, files []Entry, hashLen int, trusted bool) (copied int64, err error) {
	srcRoot, err := openDir(unix.AT_FDCWD, src)
	if err != nil {
		return 0, nil
	}
	defer unix.Close(srcRoot)
	var rootSt unix.Stat_t
	if unix.Fstat(srcRoot, &rootSt) != nil {
		return 0, nil
	}
	dstRoot, err := openDir(unix.AT_FDCWD, dst)
	if err != nil {
		return 0, nil
	}
	defer unix.Close(dstRoot)
	var next, n atomic.Int64
	var noClone atomic.Bool
	var wg sync.WaitGroup
	for range max(copyWorkers, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &diskCopier{ctx: ctx, trusted: trusted, dev: rootSt.Dev, dirs: dirStack{roots: [2]int{srcRoot, dstRoot}, dev: rootSt.Dev}, buf: make([]byte, 64<<10), hh: gitfmt.NewHash(hashLen), noClone: &noClone}
			defer c.dirs.pop(0)
			for ctx.Err() == nil {
				i := int(next.Add(copyChunk)) - copyChunk
				if i >= len(files) {
					return
				}
				for k := i; k < min(i+copyChunk, len(files)); k++ {
					f := &files[k]
					dir, name := path.Split(f.path)
					s, d := c.dirs.enter(strings.TrimSuffix(dir, "/"))
					if s < 0 || d < 0 {
						continue
					}
					if f.st, f.copied = c.copy(s, d, name, f); f.copied {
						n.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	return n.Load(), ctx.Err()
}

// openDir opens the directory name under dir, never through a symlink.
func openDir(dir int, name string) (int, error) {
	return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// dirStack keeps a directory of both trees open, and its parents.
type dirStack struct {
	roots [2]int   // the trees' tops
	dev   uint64   // the source top's device: no mount under it is entered
	names []string // the open directory's path elements
	fds   [][2]int // each element's descriptors, -1 where it failed
}

// top returns the open directory's descriptors.
func (d *dirStack) top() (int, int) {
	if len(d.fds) == 0 {
		return d.roots[0], d.roots[1]
	}
	t := d.fds[len(d.fds)-1]
	return t[0], t[1]
}

// pop closes the open directories deeper than k elements.
func (d *dirStack) pop(k int) {
	for _, fd := range d.fds[k:] {
		for _, f := range fd {
			if f >= 0 {
				unix.Close(f)
			}
		}
	}
	d.names, d.fds = d.names[:k], d.fds[:k]
}

// enter opens dir ("" the top) in both trees, making it in the destination
// where it is missing, and returns its descriptors (-1 for a tree where it
// is not a directory).
func (d *dirStack) enter(dir string) (int, int) {
	var els []string
	if dir != "" {
		els = strings.Split(dir, "/")
	}
	k := 0
	for k < len(els) && k < len(d.names) && els[k] == d.names[k] {
		k++
	}
	d.pop(k)
	for _, el := range els[k:] {
		ps, pd := d.top()
		fd := [2]int{-1, -1}
		if ps >= 0 {
			if f, err := openDir(ps, el); err == nil {
				// A file system mounted inside the source (a FUSE
				// server an agent runs could never answer a read) is
				// not entered.
				var st unix.Stat_t
				if unix.Fstat(f, &st) == nil && st.Dev == d.dev {
					fd[0] = f
				} else {
					unix.Close(f)
				}
			}
		}
		if pd >= 0 {
			_ = unix.Mkdirat(pd, el, 0o777) // as git does; the umask applies
			if f, err := openDir(pd, el); err == nil {
				fd[1] = f
			}
		}
		d.names = append(d.names, el)
		d.fds = append(d.fds, fd)
	}
	return d.top()
}

// diskCopier is one copy worker's state.
type diskCopier struct {
	ctx     context.Context
	trusted bool   // the source is grove's own: what its index vouches for is cloned, not read back
	dev     uint64 // the source's device
	dirs    dirStack
	buf     []byte
	hh      hash.Hash
	sum     []byte
	// noClone is set, for every worker, once the destination's file
	// system refuses FICLONE: it is not asked again for each file.
	noClone *atomic.Bool
}

// copy copies name from the directory src to the directory dst if its
// content is the blob f names, returning the copy's stat data.
func (c *diskCopier) copy(src, dst int, name string, f *Entry) (gitfmt.Stat, bool) {
	var st unix.Stat_t
	if f.mode == 0o120000 {
		n, err := unix.Readlinkat(src, name, c.buf)
		if err != nil || n == len(c.buf) {
			return gitfmt.Stat{}, false
		}
		target := c.buf[:n]
		if !c.isBlob(f.oid, target, int64(n)) {
			return gitfmt.Stat{}, false
		}
		if unix.Symlinkat(string(target), dst, name) != nil {
			return gitfmt.Stat{}, false
		}
		if unix.Fstatat(dst, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return gitfmt.Stat{}, false
		}
		return statOf(&st), true
	}
	in, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return gitfmt.Stat{}, false
	}
	defer unix.Close(in)
	if unix.Fstat(in, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != c.dev || st.Size > maxCopySize {
		return gitfmt.Stat{}, false
	}
	perm := uint32(0o666)
	if f.mode == 0o100755 {
		perm = 0o777
	}
	out, err := unix.Openat(dst, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return gitfmt.Stat{}, false
	}
	defer unix.Close(out)
	// The copy keeps the source's modification time (see fromdisk.go).
	mtime := st.Mtim
	trusted := c.trusted && f.trust && statOf(&st) == f.recorded
	if !c.copyContent(out, in, st.Size, f.oid, trusted) ||
		unix.UtimesNanoAt(dst, name, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, mtime}, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		unix.Fstat(out, &st) != nil {
		_ = unix.Unlinkat(dst, name, 0)
		return gitfmt.Stat{}, false
	}
	return statOf(&st), true
}

// copyContent copies size bytes from in to out, hashing them as a blob,
// and reports whether they are the blob oid. Where the file system can,
// out shares in's blocks (FICLONE), and is then read back to be hashed:
// what is verified is always what out holds. trusted (in is a seed's
// file its index vouches for) clones and reads nothing.
func (c *diskCopier) copyContent(out, in int, size int64, oid []byte, trusted bool) bool {
	if trusted {
		return size == 0 || unix.IoctlFileClone(out, in) == nil
	}
	c.hh.Reset()
	c.hh.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	from, write := in, true
	if size > 0 && !c.noClone.Load() {
		switch err := unix.IoctlFileClone(out, in); err {
		case nil:
			from, write = out, false
		case unix.EOPNOTSUPP, unix.ENOTTY, unix.EINVAL, unix.EXDEV, unix.ENOSYS:
			c.noClone.Store(true) // not this file system, nor between these two
		}
	}
	var off int64
	for off < size && c.ctx.Err() == nil {
		n, err := unix.Pread(from, c.buf[:min(int64(len(c.buf)), size-off)], off)
		if err != nil || n <= 0 {
			return false
		}
		c.hh.Write(c.buf[:n])
		if write {
			for w := 0; w < n; {
				m, err := unix.Pwrite(out, c.buf[w:n], off+int64(w))
				if err != nil || m <= 0 {
					return false
				}
				w += m
			}
		}
		off += int64(n)
	}
	if off < size {
		return false // cancelled
	}
	if !write {
		var st unix.Stat_t
		if unix.Fstat(out, &st) != nil || st.Size != size {
			return false
		}
	}
	c.sum = c.hh.Sum(c.sum[:0])
	return bytes.Equal(c.sum, oid)
}

// isBlob reports whether content hashes to the blob oid.
func (c *diskCopier) isBlob(oid, content []byte, size int64) bool {
	c.hh.Reset()
	c.hh.Write([]byte("blob " + strconv.FormatInt(size, 10) + "\x00"))
	c.hh.Write(content)
	c.sum = c.hh.Sum(c.sum[:0])
	return bytes.Equal(c.sum, oid)
}

// statOf is st as git records it.
func statOf(st *unix.Stat_t) gitfmt.Stat {
	return gitfmt.Stat{
		CtimeSec: uint32(st.Ctim.Sec), CtimeNsec: uint32(st.Ctim.Nsec),
		MtimeSec: uint32(st.Mtim.Sec), MtimeNsec: uint32(st.Mtim.Nsec),
		Dev: uint32(st.Dev), Ino: uint32(st.Ino), UID: st.Uid, GID: st.Gid, Size: uint32(st.Size),
	}
}
