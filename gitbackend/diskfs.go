package gitbackend

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/groveworks/grove/backend"
)

// diskFS is a head's working tree on disk. Containment is the standard
// library's os.Root: "..", absolute paths and symlinks leading out of the
// head are refused with PathEscape by the kernel-backed resolution, not by
// a resolver of ours. Writes go to a temporary file beside the target
// (named with tempPrefix, which grove's checkpoints ignore) and are renamed
// over it, keeping its mode.
type diskFS struct {
	dir  string
	root *os.Root
	cas  *sync.Mutex // serializes WriteFileIf on one head within the process
}

var _ backend.FS = (*diskFS)(nil)

// casLocks holds one mutex per head, shared by every handle of the head
// in this process.
var casLocks sync.Map // backend.HeadID → *sync.Mutex

func newDiskFS(dir string, id backend.HeadID) (*diskFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	mu, _ := casLocks.LoadOrStore(id, new(sync.Mutex))
	return &diskFS{dir: dir, root: root, cas: mu.(*sync.Mutex)}, nil
}

func (d *diskFS) close() { _ = d.root.Close() }

// errorf maps an os error to the FS's typed errors.
func fsError(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var be *backend.Error
	if errors.As(err, &be) {
		return err
	}
	code := backend.Internal
	var inner error = err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		inner = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		inner = le.Err
	}
	switch {
	case inner != nil && inner.Error() == "path escapes from parent":
		code = backend.PathEscape
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		code = backend.NotFound
		return &backend.Error{Code: code, Op: "gitbackend: " + op, Path: name, Err: fmt.Errorf("%w: %v", fs.ErrNotExist, inner)}
	case errors.Is(err, fs.ErrPermission):
		code = backend.PermissionDenied
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EISDIR):
		code = backend.FailedPrecondition
	case errors.Is(err, syscall.ELOOP):
		code = backend.InvalidArgument
	}
	return &backend.Error{Code: code, Op: "gitbackend: " + op, Path: name, Err: inner}
}

func checkPath(op, name string) error {
	if err := backend.CheckPath(op, name); err != nil {
		err.(*backend.Error).Op = "gitbackend: " + op
		return err
	}
	return nil
}

func (d *diskFS) Open(name string) (fs.File, error) {
	if err := checkPath("open", name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := d.root.Open(name)
	if err != nil {
		return nil, fsError("open", name, err)
	}
	if name == "." {
		return &rootDir{File: f}, nil
	}
	return f, nil
}

// rootDir is the head's root directory opened: its listing hides .git.
type rootDir struct{ *os.File }

func (r *rootDir) ReadDir(n int) ([]fs.DirEntry, error) {
	for {
		ents, err := r.File.ReadDir(n)
		ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return e.Name() == ".git" })
		if len(ents) > 0 || err != nil || n <= 0 {
			return ents, err
		}
	}
}

func (d *diskFS) Stat(name string) (fs.FileInfo, error) {
	if err := checkPath("stat", name); err != nil {
		return nil, err
	}
	fi, err := d.root.Stat(name)
	return fi, fsError("stat", name, err)
}

func (d *diskFS) Lstat(name string) (fs.FileInfo, error) {
	if err := checkPath("lstat", name); err != nil {
		return nil, err
	}
	fi, err := d.root.Lstat(name)
	return fi, fsError("lstat", name, err)
}

func (d *diskFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &backend.Error{Code: backend.FailedPrecondition, Op: "gitbackend: readdir", Path: name, Err: errors.New("not a directory")}
	}
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return nil, fsError("readdir", name, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

func (d *diskFS) ReadFile(name string) ([]byte, error) {
	if err := checkPath("readfile", name); err != nil {
		return nil, err
	}
	data, err := d.root.ReadFile(name)
	return data, fsError("readfile", name, err)
}

func (d *diskFS) ReadFileDigest(name string) ([]byte, backend.Digest, error) {
	data, err := d.ReadFile(name)
	if err != nil {
		return nil, backend.Digest{}, err
	}
	return data, backend.DigestOf(data), nil
}

func (d *diskFS) ReadLink(name string) (string, error) {
	if err := checkPath("readlink", name); err != nil {
		return "", err
	}
	t, err := d.root.Readlink(name)
	return t, fsError("readlink", name, err)
}

// target returns where a write to name lands: name itself, or, when name
// is a symlink, the file it leads to inside the head.
func (d *diskFS) target(op, name string) (string, error) {
	cur := name
	for hops := 0; hops < 40; hops++ {
		fi, err := d.root.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", fsError(op, name, err)
			}
			if fi != nil && fi.IsDir() {
				return "", &backend.Error{Code: backend.FailedPrecondition, Op: "gitbackend: " + op, Path: name, Err: errors.New("is a directory")}
			}
			return cur, nil
		}
		t, err := d.root.Readlink(cur)
		if err != nil {
			return "", fsError(op, name, err)
		}
		if err := symlinkTarget(op, cur, t); err != nil {
			return "", err
		}
		cur = path.Join(path.Dir(cur), t)
	}
	return "", &backend.Error{Code: backend.InvalidArgument, Op: "gitbackend: " + op, Path: name, Err: errors.New("too many levels of symbolic links")}
}

// symlinkTarget checks that a symlink at name pointing to target stays
// inside the head and out of .git.
func symlinkTarget(op, name, target string) error {
	if path.IsAbs(target) {
		return &backend.Error{Code: backend.PathEscape, Op: "gitbackend: " + op, Path: name, Err: fmt.Errorf("absolute symlink target %q", target)}
	}
	joined := path.Join(path.Dir(name), target)
	if joined == "." {
		return nil
	}
	return checkPath(op, joined)
}

func (d *diskFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := checkPath("writefile", name); err != nil {
		return err
	}
	p, err := d.target("writefile", name)
	if err != nil {
		return err
	}
	return d.write("writefile", p, data, perm)
}

func (d *diskFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect backend.Digest) error {
	const op = "writefileif"
	if err := checkPath(op, name); err != nil {
		return err
	}
	d.cas.Lock()
	defer d.cas.Unlock()
	p, err := d.target(op, name)
	if err != nil {
		return err
	}
	var cur backend.Digest
	old, err := d.root.ReadFile(p)
	switch {
	case err == nil:
		cur = backend.DigestOf(old)
	case !errors.Is(err, fs.ErrNotExist):
		return fsError(op, name, err)
	}
	if cur != expect {
		return &backend.Error{Code: backend.Conflict, Op: "gitbackend: " + op, Path: name, Current: &cur,
			Err: fmt.Errorf("content is %s, the caller expected %s", cur, expect)}
	}
	return d.write(op, p, data, perm)
}

// write replaces name atomically: a temporary file in the same directory,
// given the existing file's mode (or perm), renamed over name.
func (d *diskFS) write(op, name string, data []byte, perm fs.FileMode) error {
	mode := perm & 0o777
	if fi, err := d.root.Lstat(name); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode() & 0o777
	}
	dir := path.Dir(name)
	if fi, err := d.root.Stat(dir); err != nil {
		return fsError(op, name, err)
	} else if !fi.IsDir() {
		return &backend.Error{Code: backend.NotFound, Op: "gitbackend: " + op, Path: name, Err: fmt.Errorf("%w: parent is not a directory", fs.ErrNotExist)}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, tempPrefix+hex.EncodeToString(rnd[:]))
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fsError(op, name, err)
	}
	_, err = io.Copy(f, strings.NewReader(string(data)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Chmod(tmp, mode) // not narrowed by the umask
	}
	if err == nil {
		err = d.root.Rename(tmp, name)
	}
	if err != nil {
		_ = d.root.Remove(tmp)
		return fsError(op, name, err)
	}
	return nil
}

func (d *diskFS) MkdirAll(name string, perm fs.FileMode) error {
	if err := checkPath("mkdirall", name); err != nil {
		return err
	}
	return fsError("mkdirall", name, d.root.MkdirAll(name, perm&0o777))
}

func (d *diskFS) Remove(name string) error {
	if err := checkPath("remove", name); err != nil {
		return err
	}
	if name == "." {
		return &backend.Error{Code: backend.InvalidArgument, Op: "gitbackend: remove", Path: name, Err: errors.New("cannot remove the head's root")}
	}
	return fsError("remove", name, d.root.Remove(name))
}

func (d *diskFS) Rename(oldname, newname string) error {
	if err := checkPath("rename", oldname); err != nil {
		return err
	}
	if err := checkPath("rename", newname); err != nil {
		return err
	}
	return fsError("rename", oldname, d.root.Rename(oldname, newname))
}

func (d *diskFS) Symlink(target, name string) error {
	if err := checkPath("symlink", name); err != nil {
		return err
	}
	if err := symlinkTarget("symlink", name, target); err != nil {
		return err
	}
	return fsError("symlink", name, d.root.Symlink(target, name))
}

func (d *diskFS) Chmod(name string, mode fs.FileMode) error {
	if err := checkPath("chmod", name); err != nil {
		return err
	}
	return fsError("chmod", name, d.root.Chmod(name, mode&0o777))
}
