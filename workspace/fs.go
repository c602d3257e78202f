package workspace

import (
	"io/fs"

	"github.com/groveworks/grove"
)

// headFS is a head's FS as one view of the head reaches it: every call
// fails once the head is closed, and every write on a read-only view. It
// implements each method of grove.FS itself, embedding nothing, so a
// method added to the interface cannot reach the driver's FS unchecked.
// Errors are the backend's own *Error values, which already carry the FS
// operation and path, as io/fs errors do.
type headFS struct {
	h  *Head
	fs grove.FS
}

var _ grove.FS = (*headFS)(nil)

// check fails when the head is closed or, for a write, read-only.
func (f *headFS) check(op, name string, write bool) error {
	err := f.h.checkOpen("fs " + op)
	if err == nil && write {
		err = f.h.writable("fs " + op)
	}
	if err != nil {
		e := err.(*grove.Error)
		e.Path = name
		return e
	}
	return nil
}

func (f *headFS) Open(name string) (fs.File, error) {
	if err := f.check("open", name, false); err != nil {
		return nil, err
	}
	return f.fs.Open(name)
}

func (f *headFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.check("stat", name, false); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

func (f *headFS) Lstat(name string) (fs.FileInfo, error) {
	if err := f.check("lstat", name, false); err != nil {
		return nil, err
	}
	return f.fs.Lstat(name)
}

func (f *headFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.check("readdir", name, false); err != nil {
		return nil, err
	}
	return f.fs.ReadDir(name)
}

func (f *headFS) ReadFile(name string) ([]byte, error) {
	if err := f.check("readfile", name, false); err != nil {
		return nil, err
	}
	return f.fs.ReadFile(name)
}

func (f *headFS) ReadLink(name string) (string, error) {
	if err := f.check("readlink", name, false); err != nil {
		return "", err
	}
	return f.fs.ReadLink(name)
}

func (f *headFS) ReadFileDigest(name string) ([]byte, grove.Digest, error) {
	if err := f.check("readfile", name, false); err != nil {
		return nil, grove.Digest{}, err
	}
	return f.fs.ReadFileDigest(name)
}

func (f *headFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := f.check("writefile", name, true); err != nil {
		return err
	}
	return f.fs.WriteFile(name, data, perm)
}

func (f *headFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect grove.Digest) error {
	if err := f.check("writefile", name, true); err != nil {
		return err
	}
	return f.fs.WriteFileIf(name, data, perm, expect)
}

func (f *headFS) MkdirAll(name string, perm fs.FileMode) error {
	if err := f.check("mkdir", name, true); err != nil {
		return err
	}
	return f.fs.MkdirAll(name, perm)
}

func (f *headFS) Remove(name string) error {
	if err := f.check("remove", name, true); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

func (f *headFS) Rename(oldname, newname string) error {
	if err := f.check("rename", oldname, true); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

func (f *headFS) Symlink(target, name string) error {
	if err := f.check("symlink", name, true); err != nil {
		return err
	}
	return f.fs.Symlink(target, name)
}

func (f *headFS) Chmod(name string, mode fs.FileMode) error {
	if err := f.check("chmod", name, true); err != nil {
		return err
	}
	return f.fs.Chmod(name, mode)
}
