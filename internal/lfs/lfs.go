// Package lfs reads and writes Git LFS pointer files and a repository's
// LFS object store in-process, as the published pointer specification
// (version 1) and git-lfs's store layout say, so that grove can give a
// head its LFS content and capture new content without running git-lfs or
// any filter command a configuration names.
//
// A pointer is a small text blob naming an object by its SHA-256 and
// size. The store is <common git dir>/lfs/objects/<oid[0:2]>/<oid[2:4]>/<oid>,
// shared by every worktree of the repository. Everything under the common
// git dir can be written by an agent in a head, so the store is hostile
// input: it is reached through os.Root on the common git dir (a link
// leads nowhere outside it), an object is read only as a regular file,
// never through a link and without blocking, its content is checked
// against its name as it is copied out, and an object stored is written
// under its name whatever was there.
package lfs

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// Holds reports whether r reads as exactly the content p names: p.Size
// bytes whose SHA-256 is p.OID. It reads no more than one byte past that.
func (p Pointer) Holds(r io.Reader) (bool, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, p.Size+1))
	if err != nil {
		return false, err
	}
	return n == p.Size && hex.EncodeToString(h.Sum(nil)) == p.OID, nil
}

// Store is a repository's LFS object store. Every file of it is reached
// through os.Root on the common git dir: a link an agent put at lfs/,
// objects/ or a fan-out directory leads nowhere outside the repository.
type Store struct {
	common string
}

// StoreOf is the store of the repository whose common git dir is common.
func StoreOf(common string) Store { return Store{common: common} }

// name is where, under the common git dir, the store keeps p's object.
func name(p Pointer) string {
	return "lfs/objects/" + p.OID[:2] + "/" + p.OID[2:4] + "/" + p.OID
}

// Path is where the store keeps the object p names.
func (s Store) Path(p Pointer) string { return filepath.Join(s.common, filepath.FromSlash(name(p))) }

// ErrMissing is wrapped by the error for an object the store does not
// hold.
var ErrMissing = errors.New("lfs: object not in the store")

// ErrCorrupt is wrapped by the error for an object whose content is not
// what its name says.
var ErrCorrupt = errors.New("lfs: object does not match its name")

// Put stores the content r gives and returns its pointer.
func (s Store) Put(r io.Reader) (Pointer, error) {
	return s.put(nil, func(tmp *os.File, h hash.Hash) (int64, error) {
		return io.Copy(io.MultiWriter(tmp, h), r)
	})
}

// PutWanted stores the content r gives as the object want names, reading
// no more than one byte past its size: content that is not want's is
// ErrCorrupt, and nothing is stored.
func (s Store) PutWanted(r io.Reader, want Pointer) error {
	_, err := s.put(&want, func(tmp *os.File, h hash.Hash) (int64, error) {
		return io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, want.Size+1))
	})
	return err
}

// PutFile stores the content of the regular file in (from its start) and
// returns its pointer: the stored object shares in's blocks where the file
// system can (copy-on-write), and is hashed from what the store holds
// either way, so that its name is always its content's, whatever is
// written to in meanwhile.
func (s Store) PutFile(in *os.File) (Pointer, error) {
	return s.put(nil, func(tmp *os.File, h hash.Hash) (int64, error) {
		if headcopy.CloneFile(tmp, in) {
			return io.Copy(h, tmp)
		}
		return io.Copy(io.MultiWriter(tmp, h), io.NewSectionReader(in, 0, 1<<62))
	})
}

// put writes an object through fill, which writes the content to tmp (a
// new file in the store) and hashes it with h, then renames it to its
// name, over any object there: the store then holds content checked
// against its name, whatever an agent planted there before. With want,
// content that is not want's is ErrCorrupt and is not stored.
func (s Store) put(want *Pointer, fill func(tmp *os.File, h hash.Hash) (int64, error)) (Pointer, error) {
	root, err := os.OpenRoot(s.common)
	if err != nil {
		return Pointer{}, err
	}
	defer root.Close()
	if err := root.MkdirAll("lfs/tmp", 0o755); err != nil {
		return Pointer{}, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpName := "lfs/tmp/grove-" + hex.EncodeToString(rnd[:])
	f, err := root.OpenFile(tmpName, os.O_RDWR|os.O_CREATE|os.O_EXCL|regfile.ONoFollow, 0o644)
	if err != nil {
		return Pointer{}, err
	}
	defer root.Remove(tmpName) // after a rename, nothing
	h := sha256.New()
	size, err := fill(f, h)
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
	if want != nil && p != *want {
		return Pointer{}, fmt.Errorf("%w: %s came as %d bytes of %s", ErrCorrupt, want.OID, p.Size, p.OID)
	}
	dst := name(p)
	if err := root.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return Pointer{}, err
	}
	return p, root.Rename(tmpName, dst)
}

// Has reports whether the store holds an object by p's name and of its
// size (its content is checked when it is copied out).
func (s Store) Has(p Pointer) bool {
	root, err := os.OpenRoot(s.common)
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Lstat(name(p))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == p.Size
}

// WriteTo writes the content of the object p names to out, an empty file
// opened for reading and writing: sharing the object's blocks where the
// file system can (copy-on-write), copied otherwise, and read through
// either way to check it against p. It returns the object's modification
// time. An object the store lacks is ErrMissing; one that is not a
// regular file of p's size and hash is ErrCorrupt; out may then hold
// anything.
func (s Store) WriteTo(p Pointer, out *os.File) (time.Time, error) {
	root, err := os.OpenRoot(s.common)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s: %v", ErrMissing, p.OID, err)
	}
	defer root.Close()
	// The name itself, never what a link there points at, opened without
	// waiting (a FIFO planted there).
	in, err := root.OpenFile(name(p), os.O_RDONLY|regfile.ONoFollow|regfile.ONonBlock, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, fmt.Errorf("%w: %s", ErrMissing, p.OID)
	} else if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s: %v", ErrCorrupt, p.OID, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return time.Time{}, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, p.OID)
	}
	if fi.Size() != p.Size {
		return time.Time{}, fmt.Errorf("%w: %s is %d bytes, not %d", ErrCorrupt, p.OID, fi.Size(), p.Size)
	}
	h := sha256.New()
	var n int64
	if p.Size > 0 && headcopy.CloneFile(out, in) {
		n, err = io.Copy(h, io.NewSectionReader(out, 0, p.Size+1))
	} else {
		n, err = io.Copy(io.MultiWriter(out, h), io.LimitReader(in, p.Size+1))
	}
	if err != nil {
		return time.Time{}, err
	}
	if n != p.Size || hex.EncodeToString(h.Sum(nil)) != p.OID {
		return time.Time{}, fmt.Errorf("%w: %s", ErrCorrupt, p.OID)
	}
	return fi.ModTime(), nil
}

// WriteFile writes the content of the object p names to a new file at
// dst with permissions perm, as WriteTo writes it. A dst that exists is
// an error; on any error dst is removed.
func (s Store) WriteFile(p Pointer, dst string, perm os.FileMode) (err error) {
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_EXCL|regfile.ONoFollow, perm)
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
	_, err = s.WriteTo(p, out)
	return err
}
