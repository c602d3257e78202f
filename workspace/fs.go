package workspace

import (
	"io/fs"

	"github.com/groveworks/grove/backend"
)

// headFS is a head's FS that refuses every call once the head is closed.
// Errors are the backend's own *Error values, which already carry the FS
// operation and path, as io/fs errors do.
type headFS struct {
	h  *Head
	fs backend.FS
}

var _ backend.FS = (*headFS)(nil)

func (f *headFS) closed(op, name string) error {
	if err := f.h.checkOpen("fs " + op); err != nil {
		e := err.(*backend.Error)
		e.Path = name
		return e
	}
	return nil
}

func (f *headFS) Open(name string) (fs.File, error) {
	if err := f.closed("open", name); err != nil {
		return nil, err
	}
	return f.fs.Open(name)
}

func (f *headFS) Stat(name string) (fs.FileInfo, error) {
	if err := f.closed("stat", name); err != nil {
		return nil, err
	}
	return f.fs.Stat(name)
}

func (f *headFS) Lstat(name string) (fs.FileInfo, error) {
	if err := f.closed("lstat", name); err != nil {
		return nil, err
	}
	return f.fs.Lstat(name)
}

func (f *headFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.closed("readdir", name); err != nil {
		return nil, err
	}
	return f.fs.ReadDir(name)
}

func (f *headFS) ReadFile(name string) ([]byte, error) {
	if err := f.closed("readfile", name); err != nil {
		return nil, err
	}
	return f.fs.ReadFile(name)
}

func (f *headFS) ReadLink(name string) (string, error) {
	if err := f.closed("readlink", name); err != nil {
		return "", err
	}
	return f.fs.ReadLink(name)
}

func (f *headFS) ReadFileDigest(name string) ([]byte, Digest, error) {
	if err := f.closed("readfile", name); err != nil {
		return nil, Digest{}, err
	}
	return f.fs.ReadFileDigest(name)
}

func (f *headFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := f.closed("writefile", name); err != nil {
		return err
	}
	return f.fs.WriteFile(name, data, perm)
}

func (f *headFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect Digest) error {
	if err := f.closed("writefile", name); err != nil {
		return err
	}
	return f.fs.WriteFileIf(name, data, perm, expect)
}

func (f *headFS) MkdirAll(name string, perm fs.FileMode) error {
	if err := f.closed("mkdir", name); err != nil {
		return err
	}
	return f.fs.MkdirAll(name, perm)
}

func (f *headFS) Remove(name string) error {
	if err := f.closed("remove", name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

func (f *headFS) Rename(oldname, newname string) error {
	if err := f.closed("rename", oldname); err != nil {
		return err
	}
	return f.fs.Rename(oldname, newname)
}

func (f *headFS) Symlink(target, name string) error {
	if err := f.closed("symlink", name); err != nil {
		return err
	}
	return f.fs.Symlink(target, name)
}

func (f *headFS) Chmod(name string, mode fs.FileMode) error {
	if err := f.closed("chmod", name); err != nil {
		return err
	}
	return f.fs.Chmod(name, mode)
}
