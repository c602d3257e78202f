package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
)

// dirFS is a head's directory on the host, through an os.Root: whatever a
// name or a link says, no operation reaches outside the directory.
//
// The FS rules on names are applied to the resolved name: every name is
// resolved element by element, following symlinks as the kernel does (a
// target is relative to the link's directory, ".." leaves the directory
// reached so far), so a name or link leading above the root, or an
// absolute link, is PathEscape, and one reaching the root's .git is
// PermissionDenied. The operation then acts on the resolved path, which
// holds no symlink. A link swapped in between the two steps can still
// only lead inside the directory (os.Root keeps it there); a head of this
// backend has no .git of its own, so what such a race could reach there
// is a file the agent made itself.
type dirFS struct {
	root *os.Root
	cas  string // the lock file that serializes WriteFileIf on the head, across processes
}

var _ grove.FS = (*dirFS)(nil)

// maxLinks bounds the symlinks one resolution follows, as the kernel's
// limit does.
const maxLinks = 40

func fsErr(code grove.Code, op, name string, err error) *grove.Error {
	return &grove.Error{Code: code, Op: prefix + op, Path: name, Err: err}
}

func notExist(op, name string) error { return fsErr(grove.NotFound, op, name, fs.ErrNotExist) }

// gitDirError is the cause of every refusal to reach .git. It matches
// fs.ErrPermission, as grove.CheckPath's refusal of the name .git does.
type gitDirError struct{}

func (gitDirError) Error() string        { return "the git directory is not reachable through the FS" }
func (gitDirError) Is(target error) bool { return target == fs.ErrPermission }

// fsError types an error of the os package.
func fsError(op, name string, err error) error { return backendutil.OSError(prefix+op, name, err) }

// resolve finds where name leads: every element but the last is followed
// through symlinks, the last one too with follow. It returns the resolved
// path and its Lstat. When only the last element is missing, it returns
// the path it would have with a NotFound error; when an earlier one is,
// an empty path. With mkdir, missing elements are created as directories.
func (f *dirFS) resolve(op, name string, follow, mkdir bool, perm fs.FileMode) (string, fs.FileInfo, error) {
	if err := grove.CheckPath(op, name); err != nil {
		err.(*grove.Error).Op = prefix + op
		return "", nil, err
	}
	var parts []string
	if name != "." {
		parts = strings.Split(name, "/")
	}
	return f.walk(op, name, parts, follow, mkdir, perm)
}

// walk is resolve over elements that may hold "." and ".." (a link
// target's).
func (f *dirFS) walk(op, name string, parts []string, follow, mkdir bool, perm fs.FileMode) (string, fs.FileInfo, error) {
	parts = slices.Clone(parts)
	links := 0
	for i := 0; i < len(parts); {
		switch parts[i] {
		case "", ".":
			parts = slices.Delete(parts, i, i+1)
			continue
		case "..":
			if i == 0 {
				return "", nil, fsErr(grove.PathEscape, op, name, errors.New("a symlink leads outside the head"))
			}
			parts = slices.Delete(parts, i-1, i+1)
			i--
			continue
		}
		if i == 0 && parts[0] == ".git" {
			return "", nil, fsErr(grove.PermissionDenied, op, name, gitDirError{})
		}
		p := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		fi, err := f.root.Lstat(p)
		if mkdir && errors.Is(err, fs.ErrNotExist) {
			if err := f.root.Mkdir(p, perm&0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", nil, fsError(op, name, err)
			}
			fi, err = f.root.Lstat(p)
		}
		if errors.Is(err, fs.ErrNotExist) {
			if !last {
				p = ""
			}
			return p, nil, notExist(op, name)
		}
		if err != nil {
			return "", nil, fsError(op, name, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (!last || follow) {
			if links++; links > maxLinks {
				return "", nil, fsErr(grove.InvalidArgument, op, name, errors.New("too many levels of symbolic links"))
			}
			target, err := f.root.Readlink(p)
			if err != nil {
				return "", nil, fsError(op, name, err)
			}
			if target == "" || path.IsAbs(target) {
				return "", nil, fsErr(grove.PathEscape, op, name, fmt.Errorf("symlink to %q leads outside the head", target))
			}
			parts = slices.Concat(parts[:i], strings.Split(target, "/"), parts[i+1:])
			continue
		}
		if last {
			return p, fi, nil
		}
		if !fi.IsDir() {
			if mkdir {
				return "", nil, fsErr(grove.FailedPrecondition, op, name, errors.New("a parent is not a directory"))
			}
			return "", nil, notExist(op, name)
		}
		i++
	}
	// Every element led through a directory, or there were none.
	p := "."
	if len(parts) > 0 {
		p = strings.Join(parts, "/")
	}
	fi, err := f.root.Lstat(p)
	if err != nil {
		return "", nil, fsError(op, name, err)
	}
	return p, fi, nil
}

// namedInfo is a FileInfo under the name it was asked by (a followed
// symlink's, not its target's).
type namedInfo struct {
	fs.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }

func named(fi fs.FileInfo, name string) fs.FileInfo {
	if name == "." {
		return fi
	}
	return namedInfo{fi, path.Base(name)}
}

// Open opens a regular file or a directory; anything else (a FIFO would
// block) is InvalidArgument.
func (f *dirFS) Open(name string) (fs.File, error) {
	const op = "open"
	p, fi, err := f.resolve(op, name, true, false, 0)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, fsErr(grove.InvalidArgument, op, name, fmt.Errorf("not a regular file or a directory (%v)", fi.Mode().Type()))
	}
	file, err := f.root.Open(p)
	if err != nil {
		return nil, fsError(op, name, err)
	}
	if fi.IsDir() {
		return &dirFile{f: file, name: name, hideGit: p == "."}, nil
	}
	return &regularFile{f: file, name: name}, nil
}

// regularFile is an opened regular file: the reading methods of its
// *os.File, and Stat under the name it was opened by.
type regularFile struct {
	f    *os.File
	name string
}

func (r *regularFile) Read(b []byte) (int, error)                { return r.f.Read(b) }
func (r *regularFile) ReadAt(b []byte, off int64) (int, error)   { return r.f.ReadAt(b, off) }
func (r *regularFile) Seek(off int64, whence int) (int64, error) { return r.f.Seek(off, whence) }
func (r *regularFile) Close() error                              { return r.f.Close() }
func (r *regularFile) Stat() (fs.FileInfo, error) {
	fi, err := r.f.Stat()
	if err != nil {
		return nil, err
	}
	return named(fi, r.name), nil
}

// dirFile is an opened directory; a listing of the head's root hides .git.
type dirFile struct {
	f       *os.File
	name    string
	hideGit bool
}

func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: syscall.EISDIR}
}
func (d *dirFile) Close() error { return d.f.Close() }
func (d *dirFile) Stat() (fs.FileInfo, error) {
	fi, err := d.f.Stat()
	if err != nil {
		return nil, err
	}
	return named(fi, d.name), nil
}

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	for {
		ents, err := d.f.ReadDir(n)
		if d.hideGit {
			ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return e.Name() == ".git" })
		}
		if len(ents) > 0 || err != nil || n <= 0 {
			return ents, err
		}
	}
}

func (f *dirFS) Stat(name string) (fs.FileInfo, error) {
	_, fi, err := f.resolve("stat", name, true, false, 0)
	if err != nil {
		return nil, err
	}
	return named(fi, name), nil
}

func (f *dirFS) Lstat(name string) (fs.FileInfo, error) {
	_, fi, err := f.resolve("lstat", name, false, false, 0)
	if err != nil {
		return nil, err
	}
	return named(fi, name), nil
}

func (f *dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	const op = "readdir"
	_, fi, err := f.resolve(op, name, true, false, 0)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fsErr(grove.FailedPrecondition, op, name, errors.New("not a directory"))
	}
	file, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	ents, err := file.(*dirFile).ReadDir(-1)
	if err != nil {
		return nil, fsError(op, name, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

func (f *dirFS) ReadFile(name string) ([]byte, error) {
	data, _, err := f.ReadFileDigest(name)
	return data, err
}

func (f *dirFS) ReadFileDigest(name string) ([]byte, grove.Digest, error) {
	const op = "readfile"
	p, fi, err := f.resolve(op, name, true, false, 0)
	if err != nil {
		return nil, grove.Digest{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, grove.Digest{}, fsErr(grove.FailedPrecondition, op, name, fmt.Errorf("not a regular file (%v)", fi.Mode().Type()))
	}
	data, err := f.root.ReadFile(p)
	if err != nil {
		return nil, grove.Digest{}, fsError(op, name, err)
	}
	return data, grove.DigestOf(data), nil
}

func (f *dirFS) ReadLink(name string) (string, error) {
	const op = "readlink"
	p, fi, err := f.resolve(op, name, false, false, 0)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", fsErr(grove.InvalidArgument, op, name, errors.New("not a symbolic link"))
	}
	t, err := f.root.Readlink(p)
	return t, fsError(op, name, err)
}

// writable resolves name for a write: the file it leads to, or where it
// would be created (fi nil). A directory is FailedPrecondition.
func (f *dirFS) writable(op, name string) (string, fs.FileInfo, error) {
	p, fi, err := f.resolve(op, name, true, false, 0)
	if err != nil && (grove.CodeOf(err) != grove.NotFound || p == "") {
		return "", nil, err
	}
	if p == "." || fi != nil && fi.IsDir() {
		return "", nil, fsErr(grove.FailedPrecondition, op, name, errors.New("is a directory"))
	}
	return p, fi, nil
}

// WriteFile holds the head's cas lock file, so that it never lands between
// the check and the write of a WriteFileIf.
func (f *dirFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	const op = "writefile"
	if err := grove.CheckPath(op, name); err != nil {
		err.(*grove.Error).Op = prefix + op
		return err
	}
	unlock, err := lockFile(context.Background(), op, f.cas)
	if err != nil {
		return err
	}
	defer unlock()
	p, fi, err := f.writable(op, name)
	if err != nil {
		return err
	}
	return f.write(op, name, p, fi, data, perm)
}

// WriteFileIf holds the head's cas lock file for the check and the write,
// so it is a compare-and-set against every WriteFile and WriteFileIf of
// the head, in any process.
func (f *dirFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect grove.Digest) error {
	const op = "writefileif"
	if err := grove.CheckPath(op, name); err != nil {
		err.(*grove.Error).Op = prefix + op
		return err
	}
	unlock, err := lockFile(context.Background(), op, f.cas)
	if err != nil {
		return err
	}
	defer unlock()
	p, fi, err := f.writable(op, name)
	if err != nil {
		return err
	}
	var cur grove.Digest
	if fi != nil {
		old, err := f.root.ReadFile(p)
		if err != nil {
			return fsError(op, name, err)
		}
		cur = grove.DigestOf(old)
	}
	if cur != expect {
		e := fsErr(grove.Conflict, op, name, fmt.Errorf("content is %s, the caller expected %s", cur, expect))
		e.Current = &cur
		return e
	}
	return f.write(op, name, p, fi, data, perm)
}

// write replaces resolved path p atomically, keeping an existing regular
// file's mode.
func (f *dirFS) write(op, name, p string, fi fs.FileInfo, data []byte, perm fs.FileMode) error {
	mode := perm & 0o777
	if fi != nil && fi.Mode().IsRegular() {
		mode = fi.Mode() & 0o777
	}
	tmp := path.Join(path.Dir(p), tempPrefix+newUUID())
	err := writeTemp(f.root, tmp, data, mode)
	if err == nil {
		err = f.root.Rename(tmp, p)
	}
	if err != nil {
		_ = f.root.Remove(tmp)
	}
	return fsError(op, name, err)
}

func (f *dirFS) MkdirAll(name string, perm fs.FileMode) error {
	const op = "mkdirall"
	_, fi, err := f.resolve(op, name, true, true, perm)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fsErr(grove.FailedPrecondition, op, name, errors.New("not a directory"))
	}
	return nil
}

func (f *dirFS) Remove(name string) error {
	const op = "remove"
	p, _, err := f.resolve(op, name, false, false, 0)
	if err != nil {
		return err
	}
	if p == "." {
		return fsErr(grove.InvalidArgument, op, name, errors.New("cannot remove the head's root"))
	}
	return fsError(op, name, f.root.Remove(p))
}

func (f *dirFS) Rename(oldname, newname string) error {
	const op = "rename"
	from, ffi, err := f.resolve(op, oldname, false, false, 0)
	if err != nil {
		return err
	}
	to, tfi, err := f.resolve(op, newname, false, false, 0)
	if err != nil && (grove.CodeOf(err) != grove.NotFound || to == "") {
		return err
	}
	switch {
	case from == "." || to == ".":
		return fsErr(grove.InvalidArgument, op, oldname, errors.New("cannot rename the head's root"))
	case tfi != nil && tfi.IsDir():
		return fsErr(grove.FailedPrecondition, op, newname, errors.New("is a directory"))
	case tfi != nil && ffi.IsDir():
		return fsErr(grove.FailedPrecondition, op, newname, errors.New("not a directory"))
	case ffi.IsDir() && strings.HasPrefix(to+"/", from+"/"):
		return fsErr(grove.InvalidArgument, op, newname, errors.New("cannot move a directory into itself"))
	}
	return fsError(op, oldname, f.root.Rename(from, to))
}

// Symlink refuses a target that leads outside the head or to .git now; a
// link that only later resolves to .git is refused when it is followed.
func (f *dirFS) Symlink(target, name string) error {
	const op = "symlink"
	if !capabilities.Symlinks {
		return fsErr(grove.Unimplemented, op, name, errors.New("symlinks are not supported on this platform"))
	}
	p, _, err := f.resolve(op, name, false, false, 0)
	switch {
	case err == nil:
		return fsErr(grove.AlreadyExists, op, name, fs.ErrExist)
	case grove.CodeOf(err) != grove.NotFound || p == "":
		return err
	case target == "" || path.IsAbs(target):
		return fsErr(grove.PathEscape, op, name, fmt.Errorf("symlink target %q leads outside the head", target))
	}
	var parts []string
	if d := path.Dir(p); d != "." {
		parts = strings.Split(d, "/")
	}
	parts = append(parts, strings.Split(target, "/")...)
	if _, _, err := f.walk(op, name, parts, true, false, 0); err != nil {
		if c := grove.CodeOf(err); c == grove.PathEscape || c == grove.PermissionDenied {
			return err
		}
	}
	return fsError(op, name, f.root.Symlink(target, p))
}

func (f *dirFS) Chmod(name string, mode fs.FileMode) error {
	const op = "chmod"
	if !capabilities.FileModes {
		return fsErr(grove.Unimplemented, op, name, errors.New("file modes are not supported on this platform"))
	}
	p, _, err := f.resolve(op, name, true, false, 0)
	if err != nil {
		return err
	}
	return fsError(op, name, f.root.Chmod(p, mode&0o777))
}
