package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"syscall"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
	"github.com/groveworks/grove/internal/lock"
)

// rootFS is an extra root's directory on the host, through an os.Root:
// whatever a name or a link says, nothing outside the directory is
// reached (the kernel-backed resolution of os.Root refuses it with
// PathEscape). Writes replace files atomically (a temporary file beside
// the target, renamed over it, keeping its mode). WriteFileIf compares and
// sets under a per-root file lock, across processes. A read-only root
// answers every write with PermissionDenied. It is not a head: nothing is
// checkpointed, restored or forked.
type rootFS struct {
	name     string
	root     *os.Root
	readOnly bool
	cas      string      // the lock file of WriteFileIf, in the engine's lease directory
	mu       *sync.Mutex // WriteFileIf within the process
	release  func()      // gives mu back (see rootLocks)
}

var _ grove.FS = (*rootFS)(nil)

// rootLocks holds one mutex per root lock file, shared in the process
// while a session has the root open.
var rootLocks lock.Shared[string, sync.Mutex]

func openRootFS(r Root, casLock string) (*rootFS, error) {
	root, err := os.OpenRoot(r.Dir)
	if err != nil {
		return nil, err
	}
	mu, release := rootLocks.Acquire(casLock)
	return &rootFS{name: r.Name, root: root, readOnly: r.ReadOnly, cas: casLock, mu: mu, release: release}, nil
}

func (r *rootFS) close() {
	_ = r.root.Close()
	r.release()
}

// fail types an error of the os package for the root's name name.
func (r *rootFS) fail(op, name string, err error) error {
	return backendutil.OSError("engine: root "+op, name, err)
}

func (r *rootFS) check(op, name string) error {
	if err := grove.CheckPath("engine: root "+op, name); err != nil {
		return err
	}
	return nil
}

func (r *rootFS) writable(op, name string) error {
	if err := r.check(op, name); err != nil {
		return err
	}
	if r.readOnly {
		return &grove.Error{Code: grove.PermissionDenied, Op: "engine: root " + op, Path: name,
			Err: fmt.Errorf("root %q is mounted read-only", r.name)}
	}
	return nil
}

func (r *rootFS) Open(name string) (fs.File, error) {
	if err := r.check("open", name); err != nil {
		return nil, err
	}
	// Non-blocking, so that a FIFO planted in the root cannot hang the
	// open; only files and directories are read.
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, r.fail("open", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, r.fail("open", name, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		_ = f.Close()
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "engine: root open", Path: name, Err: errors.New("not a regular file")}
	}
	return f, nil
}

func (r *rootFS) Stat(name string) (fs.FileInfo, error) {
	if err := r.check("stat", name); err != nil {
		return nil, err
	}
	fi, err := r.root.Stat(name)
	return fi, r.fail("stat", name, err)
}

func (r *rootFS) Lstat(name string) (fs.FileInfo, error) {
	if err := r.check("lstat", name); err != nil {
		return nil, err
	}
	fi, err := r.root.Lstat(name)
	return fi, r.fail("lstat", name, err)
}

func (r *rootFS) ReadLink(name string) (string, error) {
	if err := r.check("readlink", name); err != nil {
		return "", err
	}
	t, err := r.root.Readlink(name)
	return t, r.fail("readlink", name, err)
}

func (r *rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: "engine: root readdir", Path: name, Err: errors.New("not a directory")}
	}
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, r.fail("readdir", name, err)
	}
	return ents, nil
}

func (r *rootFS) ReadFile(name string) ([]byte, error) {
	data, _, err := r.ReadFileDigest(name)
	return data, err
}

func (r *rootFS) ReadFileDigest(name string) ([]byte, grove.Digest, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, grove.Digest{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, grove.Digest{}, &grove.Error{Code: grove.FailedPrecondition, Op: "engine: root readfile", Path: name, Err: errors.New("is a directory")}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, grove.Digest{}, r.fail("readfile", name, err)
	}
	return data, grove.DigestOf(data), nil
}

func (r *rootFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := r.writable("writefile", name); err != nil {
		return err
	}
	return r.write("writefile", name, data, perm)
}

func (r *rootFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect grove.Digest) error {
	const op = "writefileif"
	if err := r.writable(op, name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, err := lock.Acquire(context.Background(), r.cas, "compare-and-set write")
	if err != nil {
		return err
	}
	defer l.Unlock()
	var cur grove.Digest
	old, _, err := r.ReadFileDigest(name)
	switch {
	case err == nil:
		cur = grove.DigestOf(old)
	case grove.CodeOf(err) != grove.NotFound:
		return err
	}
	if cur != expect {
		return &grove.Error{Code: grove.Conflict, Op: "engine: root " + op, Path: name, Current: &cur,
			Err: fmt.Errorf("content is %s, the caller expected %s", cur, expect)}
	}
	return r.write(op, name, data, perm)
}

// write replaces name atomically, keeping an existing file's mode.
func (r *rootFS) write(op, name string, data []byte, perm fs.FileMode) error {
	mode := perm & 0o777
	if fi, err := r.root.Lstat(name); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			// A write would replace the link, where a read follows it:
			// write the file it names instead.
			return &grove.Error{Code: grove.FailedPrecondition, Op: "engine: root " + op, Path: name, Err: errors.New("is a symbolic link; write the file it names")}
		case fi.IsDir():
			return &grove.Error{Code: grove.FailedPrecondition, Op: "engine: root " + op, Path: name, Err: errors.New("is a directory")}
		case fi.Mode().IsRegular():
			mode = fi.Mode() & 0o777
		}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(name), ".grove-tmp-"+hex.EncodeToString(rnd[:]))
	f, err := r.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return r.fail(op, name, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = r.root.Remove(tmp)
		return r.fail(op, name, err)
	}
	if err := r.root.Rename(tmp, name); err != nil {
		_ = r.root.Remove(tmp)
		return r.fail(op, name, err)
	}
	return nil
}

func (r *rootFS) MkdirAll(name string, perm fs.FileMode) error {
	if err := r.writable("mkdirall", name); err != nil {
		return err
	}
	return r.fail("mkdirall", name, r.root.MkdirAll(name, perm&0o777))
}

func (r *rootFS) Remove(name string) error {
	if err := r.writable("remove", name); err != nil {
		return err
	}
	return r.fail("remove", name, r.root.Remove(name))
}

func (r *rootFS) Rename(oldname, newname string) error {
	if err := r.writable("rename", oldname); err != nil {
		return err
	}
	if err := r.writable("rename", newname); err != nil {
		return err
	}
	return r.fail("rename", newname, r.root.Rename(oldname, newname))
}

func (r *rootFS) Symlink(target, name string) error {
	if err := r.writable("symlink", name); err != nil {
		return err
	}
	if to := path.Join(path.Dir(name), target); path.IsAbs(target) || to == ".." || strings.HasPrefix(to, "../") {
		return &grove.Error{Code: grove.PathEscape, Op: "engine: root symlink", Path: name, Err: fmt.Errorf("the target %q leads out of the root", target)}
	}
	if _, err := r.root.Lstat(name); err == nil {
		return &grove.Error{Code: grove.AlreadyExists, Op: "engine: root symlink", Path: name, Err: fs.ErrExist}
	}
	return r.fail("symlink", name, r.root.Symlink(target, name))
}

func (r *rootFS) Chmod(name string, mode fs.FileMode) error {
	if err := r.writable("chmod", name); err != nil {
		return err
	}
	return r.fail("chmod", name, r.root.Chmod(name, mode&0o777))
}
