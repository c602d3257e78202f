package grove

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"strings"
)

// Digest is the SHA-256 of a file's content. The zero Digest means "must not
// exist" when given to FS.WriteFileIf.
type Digest [sha256.Size]byte

// DigestOf returns the digest of data.
func DigestOf(data []byte) Digest { return sha256.Sum256(data) }

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool { return d == Digest{} }

// String returns d in lowercase hexadecimal, or "none" for the zero Digest.
func (d Digest) String() string {
	if d.IsZero() {
		return "none"
	}
	return hex.EncodeToString(d[:])
}

// FS is a head's working tree. Names are io/fs names: slash-separated,
// relative to the head's root, without "." or ".." elements (fs.ValidPath).
//
// The read side is io/fs, so testing/fstest.TestFS checks it. Open, Stat and
// ReadFile follow symlinks that stay inside the head; Lstat and ReadLink do
// not follow. A name with a ".." element or a leading "/", or a symlink
// leading outside the head, is PathEscape; another malformed name is
// InvalidArgument; a name whose first element is ".git" is PermissionDenied,
// and so is any name that resolves to the root's .git or into it through
// symlinks: the git directory is never reachable through the FS, by any
// path or link, for reads, writes, listings and Open. The rule holds on
// the resolved name, when it is used: Symlink refuses a target resolving
// to .git, a link that comes to resolve to it later is refused when
// followed, and a listing of the root, by any name, does not list .git.
// A missing file is NotFound, and the error also matches fs.ErrNotExist.
//
// Writes replace files atomically (readers see the old or the new content,
// never a mix) and keep an existing file's mode. Errors are *Error values
// with Op and Path set.
type FS interface {
	fs.FS
	fs.StatFS
	fs.ReadDirFS
	fs.ReadFileFS
	fs.ReadLinkFS

	// ReadFileDigest returns the content of name and its digest, from one
	// read, for a later WriteFileIf.
	ReadFileDigest(name string) ([]byte, Digest, error)

	// WriteFile writes data to name, creating it with perm (only its 0o777
	// bits are used) or keeping an existing file's mode. The parent
	// directory must exist (NotFound otherwise); a name that is a directory
	// is FailedPrecondition.
	WriteFile(name string, data []byte, perm fs.FileMode) error

	// WriteFileIf writes like WriteFile only if the content there now has
	// digest expect, or, for the zero Digest, only if name does not exist.
	// Otherwise it writes nothing and fails with Conflict, with
	// Error.Current set to the digest of the content there now (zero if
	// none). The check and the write are atomic with respect to other
	// writers of the same head through this FS.
	WriteFileIf(name string, data []byte, perm fs.FileMode, expect Digest) error

	// MkdirAll creates directory name and any missing parents. Where name
	// or a parent is something other than a directory, MkdirAll is
	// FailedPrecondition.
	MkdirAll(name string, perm fs.FileMode) error

	// Remove removes a file, a symlink or an empty directory; a directory
	// that is not empty is FailedPrecondition and is left as it is.
	Remove(name string) error

	// Rename moves oldname to newname, replacing a file there. A newname
	// that is a directory is FailedPrecondition, and so is a newname that
	// exists when oldname is a directory; moving a directory into itself
	// is InvalidArgument.
	Rename(oldname, newname string) error

	// Symlink creates name as a symlink to target, which must be relative
	// and stay inside the head (PathEscape otherwise). A link never
	// replaces anything: a name that exists is AlreadyExists. Backends
	// without Capabilities.Symlinks answer Unimplemented.
	Symlink(target, name string) error

	// Chmod sets the permission bits of name. Backends without
	// Capabilities.FileModes answer Unimplemented.
	Chmod(name string, mode fs.FileMode) error
}

// CheckPath validates an FS name for operation op and returns nil or the
// *Error an FS must answer: PathEscape for a ".." element or a leading "/",
// PermissionDenied for a first element ".git", InvalidArgument for any
// other name that is not fs.ValidPath.
func CheckPath(op, name string) error {
	if fs.ValidPath(name) {
		if name == ".git" || strings.HasPrefix(name, ".git/") {
			return &Error{Code: PermissionDenied, Op: op, Path: name, Err: fs.ErrPermission}
		}
		return nil
	}
	if strings.HasPrefix(name, "/") || name == ".." || strings.HasPrefix(name, "../") ||
		strings.HasSuffix(name, "/..") || strings.Contains(name, "/../") {
		return &Error{Code: PathEscape, Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return &Error{Code: InvalidArgument, Op: op, Path: name, Err: fs.ErrInvalid}
}
