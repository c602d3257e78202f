// Package regfile reads files an adversary may have replaced: a head's
// .git file, its git dir's gitdir, commondir, HEAD and index, grove's
// metadata, a repository's configuration files. An agent can put a FIFO or
// a device where a file is expected, and opening a FIFO for reading waits
// for a writer that never comes, out of reach of any context. Read never
// blocks: it opens without waiting and reads only a regular file.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error Read answers for a path that holds
// something else than a regular file (a directory, a FIFO, a socket, a
// device).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error Read answers for a file over its
// limit.
var ErrTooLarge = errors.New("file too large")

// Open opens the regular file at path for reading, without blocking,
// following symlinks as os.Open does; anything but a regular file there
// wraps ErrNotRegular. The caller closes the file.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	}
	return f, fi, nil
}

// Read returns the content of the regular file at path, following
// symlinks as os.ReadFile does. A missing file is an error matching
// fs.ErrNotExist; anything but a regular file there wraps ErrNotRegular,
// and one larger than limit bytes (limit > 0) wraps ErrTooLarge.
func Read(path string, limit int64) ([]byte, error) {
	return ReadInto(nil, path, limit)
}

// ReadInto is Read that reads into buf's storage when limit > 0 and the
// file fits in buf's capacity: a caller reading large files over and
// over can keep one buffer for them (fresh memory costs the page faults
// that fill it, some 2 ms a megabyte on a virtual machine). The answer is
// buf's storage then, or new storage.
func ReadInto(buf []byte, path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if limit > 0 && fi.Size() > limit {
		// Refused before a byte is read (a sparse file of any size costs
		// nothing to make).
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit)}
	}
	if limit <= 0 {
		return io.ReadAll(f)
	}
	// Read into a buffer of the size the file has (one read, no growing
	// copies), plus room to see that it grew past limit meanwhile.
	size := min(fi.Size(), limit) + 512
	data := buf[:0]
	if int64(cap(buf)) < size {
		data = make([]byte, 0, size)
	}
	for {
		n, rerr := f.Read(data[len(data):min(int64(cap(data)), limit+1)])
		data = data[:len(data)+n]
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return data, rerr
		}
		if int64(len(data)) > limit {
			break
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grow: the file grew
		}
	}
	if int64(len(data)) > limit {
		return data, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit)}
	}
	return data, nil
}

// ReadIn reads the regular file name under root, refusing anything
// else there (a FIFO would block the read), without following a symlink
// at its last element.
func ReadIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|ONonBlock|ONoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", name, ErrNotRegular)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %w", name, ErrTooLarge)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// ReadDir lists the directory at path without blocking and without
// following a link in its last element: a FIFO, a link or anything else
// put there, even between a caller's Lstat and this call, is an error,
// never a wait.
func ReadDir(path string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|ONonBlock|ONoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", path)
	}
	return f.ReadDir(-1)
}

// ReadDirIn lists the directory name under root, which must be a
// directory itself, not a link to one.
func ReadDirIn(root *os.Root, name string) ([]fs.DirEntry, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
