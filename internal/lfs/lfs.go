// Package lfs reads and writes Git LFS pointer files and a repository's
// LFS object store in-process, as the published pointer specification
// (version 1) and git-lfs's store layout say, so that grove can give a
// head its LFS content and capture new content without running git-lfs or
// any filter command a configuration names.
//
// A pointer is a small text blob naming an object by its SHA-256 and
// size. The store is <common git dir>/lfs/objects/<oid[0:2]>/<oid[2:4]>/<oid>,
// shared by every worktree of the repository. Everything under the common
// git dir can be written by an agent in a head, so an object is hostile
// input: it is read only as a regular file, never followed through a
// link, and its content is checked against its name as it is copied out.
package lfs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/regfile"
)

// Version is the first line of every pointer this package reads or writes.
const Version = "version https://git-lfs.github.com/spec/v1"

// MaxPointerSize is the largest blob read as a pointer; git-lfs reads no
// larger one either.
const MaxPointerSize = 1024

// Pointer names an LFS object: the SHA-256 of its content (lower-case
// hex) and its size in bytes.
type Pointer struct {
	OID  string
	Size int64
}

// ErrNotPointer is Parse's error for data that is not a pointer.
var ErrNotPointer = errors.New("lfs: not a pointer")

// Parse reads data as a pointer file: the version line, then "oid
// sha256:<64 hex digits>" and "size <decimal>", each line ending in a
// line feed, with no other key. Pointers with extensions (ext-* keys),
// which name content a program must transform, and anything git-lfs
// would not have written are ErrNotPointer: the blob is then a file like
// any other.
func Parse(data []byte) (Pointer, error) {
	if len(data) > MaxPointerSize || !bytes.HasSuffix(data, []byte("\n")) {
		return Pointer{}, ErrNotPointer
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	if len(lines) != 3 || lines[0] != Version {
		return Pointer{}, ErrNotPointer
	}
	oid, ok := strings.CutPrefix(lines[1], "oid sha256:")
	if !ok || !validOID(oid) {
		return Pointer{}, ErrNotPointer
	}
	sizeText, ok := strings.CutPrefix(lines[2], "size ")
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if !ok || err != nil || size < 0 || strconv.FormatInt(size, 10) != sizeText {
		return Pointer{}, ErrNotPointer
	}
	return Pointer{OID: oid, Size: size}, nil
}

// validOID reports whether s is a SHA-256 in lower-case hex.
func validOID(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Bytes is p as git-lfs writes it.
func (p Pointer) Bytes() []byte {
	return []byte(fmt.Sprintf("%s\noid sha256:%s\nsize %d\n", Version, p.OID, p.Size))
}

// Store is a repository's LFS object store.
type Store struct {
	dir string // <common git dir>/lfs
}

// StoreOf is the store of the repository whose common git dir is common.
func StoreOf(common string) Store { return Store{dir: filepath.Join(common, "lfs")} }

// Path is where the store keeps the object p names.
func (s Store) Path(p Pointer) string {
	return filepath.Join(s.dir, "objects", p.OID[:2], p.OID[2:4], p.OID)
}

// ErrMissing is wrapped by the error for an object the store does not
// hold.
var ErrMissing = errors.New("lfs: object not in the store")

// ErrCorrupt is wrapped by the error for an object whose content is not
// what its name says.
var ErrCorrupt = errors.New("lfs: object does not match its name")

// Put stores the content r gives and returns its pointer. The content is
// written to a temporary file in the store as it is hashed, then renamed
// to its name; an object already there is kept (objects are named by
// their content).
func (s Store) Put(r io.Reader) (Pointer, error) {
	tmpDir := filepath.Join(s.dir, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return Pointer{}, err
	}
	f, err := os.CreateTemp(tmpDir, "grove-*")
	if err != nil {
		return Pointer{}, err
	}
	defer os.Remove(f.Name()) // after a rename, nothing
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Pointer{}, err
	}
	p := Pointer{OID: hex.EncodeToString(h.Sum(nil)), Size: size}
	dst := s.Path(p)
	if fi, err := os.Lstat(dst); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		return p, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Pointer{}, err
	}
	return p, os.Rename(f.Name(), dst)
}

// Has reports whether the store holds an object by p's name and of its
// size (its content is checked when it is copied out).
func (s Store) Has(p Pointer) bool {
	fi, err := os.Lstat(s.Path(p))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == p.Size
}

// WriteFile writes the content of the object p names to a new file at
// dst with permissions perm: sharing the object's blocks where the file
// system can (copy-on-write), copied otherwise, and read through either
// way to check it against p. An object the store lacks is ErrMissing; one
// that is not a regular file of p's size and hash is ErrCorrupt. A dst
// that exists is an error; on any error dst is removed.
func (s Store) WriteFile(p Pointer, dst string, perm os.FileMode) (err error) {
	path := s.Path(p)
	// The name itself, never what a link there points at: the file
	// opened must be the one found (os.SameFile), whatever was swapped in
	// between.
	lfi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrMissing, p.OID)
	} else if err != nil || !lfi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, p.OID)
	}
	in, fi, err := regfile.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, p.OID, err)
	}
	defer in.Close()
	if !os.SameFile(lfi, fi) {
		return fmt.Errorf("%w: %s was replaced while it was opened", ErrCorrupt, p.OID)
	}
	if fi.Size() != p.Size {
		return fmt.Errorf("%w: %s is %d bytes, not %d", ErrCorrupt, p.OID, fi.Size(), p.Size)
	}
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(dst)
		}
	}()
	h := sha256.New()
	var n int64
	if p.Size > 0 && headcopy.CloneFile(out, in) {
		n, err = io.Copy(h, io.NewSectionReader(out, 0, p.Size+1))
	} else {
		n, err = io.Copy(io.MultiWriter(out, h), io.LimitReader(in, p.Size+1))
	}
	if err != nil {
		return err
	}
	if n != p.Size || hex.EncodeToString(h.Sum(nil)) != p.OID {
		return fmt.Errorf("%w: %s", ErrCorrupt, p.OID)
	}
	return nil
}
