// Package rootfs is grove's one confined file system: a directory on the
// host behind an os.Root, as a grove.FS. Heads (gitbackend) and the roots
// the engine mounts beside a session's head both are one.
//
// Containment is the standard library's os.Root: "..", absolute paths and
// symlinks leading out of the directory are refused with PathEscape by the
// kernel-backed resolution of os.Root, not by a resolver of ours.
//
// The root's .git (a head's git file or directory; a root's repository)
// is never reachable through the FS, by any path or link: the rule holds on the resolved name, not on its spelling. Every
// name is resolved element by element (resolve), each step an operation
// of an os.Root on one directory it holds open, so a resolution only ever
// decides where inside the directory a name leads; it never widens what
// os.Root contains. A name whose resolution reaches the root's .git — by
// its name, or by its identity (a hard link, or another spelling on a
// case-insensitive file system) — is PermissionDenied, for reads, writes,
// listings and Open alike; a listing of any directory that is the FS's
// root hides .git; a symlink whose target resolves to .git is refused when
// created, and refused again when used (a link may come from a checkout
// or from the agent's shell, and a dangling link may start to resolve to
// .git later).
//
// An entry may be swapped (a directory for a symlink, say) between the
// step that examined it and the operation that uses it. Every operation
// therefore acts on one element inside a directory held open, and checks
// by identity (os.SameFile) that what it opened is what the resolution
// examined, starting over when it is not. Operations that cannot open
// first use calls that never follow the final element (rename, unlink,
// symlink creation) or are confined to a directory whose subtree cannot
// hold .git. The one residual is Chmod of an entry the caller may not
// open for reading that lies directly in the root, where .git is a
// directory (an attached checkout): a swap racing that chmod can
// change the mode (never the content) of a file inside the git directory.
// A mode change of .git itself is detected and undone.
//
// Writes go to a temporary file beside the target (named with TempPrefix)
// and are renamed over it, keeping its mode. No name is taken from the
// user: a write holds the FS's writes lock for reading while its
// temporary file exists, and a checkpoint holds it for writing while git
// looks at the tree (HoldWrites), so no checkpoint in this process ever
// sees one.
//
// An FS with Options.ReadOnly answers every write with PermissionDenied.
package rootfs

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
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend/backendutil"
	"github.com/groveworks/grove/internal/lock"
)

// FS is a directory on the host as a grove.FS: a head's working tree, or
// a root the engine mounts beside a session's head.
type FS struct {
	dir      string
	prefix   string // starts every error's Op
	root     *os.Root
	readOnly string        // why every write is refused; "" when writable
	cas      *sync.Mutex   // serializes WriteFileIf on one directory within the process
	casLock  string        // the file lock that serializes it across processes
	writes   *sync.RWMutex // held for reading while a write's temporary file exists
	release  func()        // gives the shared mutexes back (see sharedLocks)
}

var _ grove.FS = (*FS)(nil)

// Options configure Open.
type Options struct {
	// Op names the FS's owner in every error's Op ("gitbackend",
	// "engine: root").
	Op string
	// Key names the directory among the FSes of this process, which share
	// their compare-and-set and write locks while open (a head's ID).
	Key string
	// CASLock is the lock file that serializes WriteFileIf across
	// processes.
	CASLock string
	// ReadOnly, when set, is why every write is PermissionDenied.
	ReadOnly string
}

// sharedLocks are the mutexes every FS of one Key in this process
// shares, kept while one is open.
var sharedLocks lock.Shared[string, struct {
	cas    sync.Mutex
	writes sync.RWMutex
}]

// SharedLocks is how many directories' shared locks the process keeps:
// one per Key with an FS open, none once they are all closed.
func SharedLocks() int { return sharedLocks.Len() }

// Open opens dir as an FS. Close releases it.
func Open(dir string, o Options) (*FS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	l, release := sharedLocks.Acquire(o.Key)
	return &FS{dir: dir, prefix: o.Op + ": ", root: root, readOnly: o.ReadOnly, cas: &l.cas, casLock: o.CASLock,
		writes: &l.writes, release: release}, nil
}

// Close releases the FS; it is not used after.
func (d *FS) Close() {
	_ = d.root.Close()
	d.release()
}

// HoldWrites waits for the writes in flight in this process and holds
// off new ones until release is called: while held, no temporary file of
// a write exists in the directory (a checkpoint holds it while git looks
// at the tree).
func (d *FS) HoldWrites() (release func()) {
	d.writes.Lock()
	return d.writes.Unlock
}

// deny refuses a write to a read-only FS.
func (d *FS) deny(op, name string) error {
	if d.readOnly == "" {
		return nil
	}
	return &grove.Error{Code: grove.PermissionDenied, Op: op, Path: name, Err: errors.New(d.readOnly)}
}

// TempPrefix starts the names of the temporary files writes make beside
// their targets.
const TempPrefix = ".grove-tmp-"

// op is an error's Op for the FS operation name.
func (d *FS) op(name string) string { return d.prefix + name }

const (
	// maxLinks bounds the symlinks one resolution follows, as the kernel's
	// limit does.
	maxLinks = 40
	// maxRetries bounds how often an operation starts over because an
	// entry changed while it was resolved.
	maxRetries = 8
)

// errChanged reports that an entry changed between the resolution that
// examined it and its use; the operation starts over.
var errChanged = errors.New("an entry changed while the path was resolved")

// gitDirError is the cause of every refusal to reach the git directory.
// It matches fs.ErrPermission, as CheckPath's refusal does.
type gitDirError struct{}

func (gitDirError) Error() string        { return "the git directory is not reachable through the FS" }
func (gitDirError) Is(target error) bool { return target == fs.ErrPermission }
func gitDenied(op, name string) *grove.Error {
	return &grove.Error{Code: grove.PermissionDenied, Op: op, Path: name, Err: gitDirError{}}
}

// fsError maps an os error to the FS's typed errors.
func fsError(op, name string, err error) error {
	return backendutil.OSError(op, name, err)
}

func checkPath(op, name string) error {
	if err := grove.CheckPath(op, name); err != nil {
		err.(*grove.Error).Op = op
		return err
	}
	return nil
}

// retry runs f until it does not report errChanged, a bounded number of
// times; an entry that keeps changing is Busy.
func retry[T any](op, name string, f func() (T, error)) (T, error) {
	for try := 0; ; try++ {
		v, err := f()
		if !errors.Is(err, errChanged) {
			return v, err
		}
		if try == maxRetries {
			var zero T
			return zero, &grove.Error{Code: grove.Busy, Op: op, Path: name,
				Err: errors.New("the path kept changing while it was resolved")}
		}
	}
}

// spot is where a name leads: the directory holding its last element,
// held open, and the element's name and Lstat.
type spot struct {
	dir  *os.Root    // the directory holding the element
	path string      // dir's path from the head's root, through directories only
	base string      // the element's name in dir; "" when the name is the root itself
	fi   fs.FileInfo // the element's Lstat; nil when it does not exist
	git  fs.FileInfo // the Lstat of the root's .git when resolved; nil if none
	held []*os.Root  // directories opened by the resolution, closed by release
}

func (s *spot) release() {
	for _, r := range s.held {
		_ = r.Close()
	}
	s.held = nil
}

// isRoot reports whether the name is the head's root directory itself.
func (s *spot) isRoot() bool { return s.base == "" }

// resolve modes.
const (
	followLast = 1 << iota // follow a symlink in the last element too
	mayMiss                // the last element may be missing
	makeDirs               // create missing elements as directories (MkdirAll)
)

// resolve finds where the FS name leads. Every element but the last is
// followed through symlinks; the last one too with followLast. Symlinks
// are followed as the kernel does: a target is relative to the directory
// holding the link, and ".." leaves the directory reached so far. A name
// or link leading above the root, or an absolute link, is PathEscape; a
// resolution reaching the root's .git is PermissionDenied. The caller
// releases the spot.
func (d *FS) resolve(op, name string, mode int, perm fs.FileMode) (*spot, error) {
	if err := checkPath(op, name); err != nil {
		return nil, err
	}
	var parts []string
	if name != "." {
		parts = strings.Split(name, "/")
	}
	return d.resolveParts(op, name, parts, mode, perm)
}

// resolveParts is resolve over name's elements, which may hold "." and
// ".." (a symlink target's).
func (d *FS) resolveParts(op, name string, parts []string, mode int, perm fs.FileMode) (*spot, error) {
	git, err := d.root.Lstat(".git")
	if err != nil {
		git = nil
	}
	parts = slices.Clone(parts)
	// dirs[k] is the directory parts[:k] leads to, held open; infos[k] its
	// Lstat.
	dirs := []*os.Root{d.root}
	infos := []fs.FileInfo{nil}
	fail := func(err error) (*spot, error) {
		for _, r := range dirs[1:] {
			_ = r.Close()
		}
		return nil, err
	}
	done := func(i int, base string, fi fs.FileInfo) (*spot, error) {
		held := slices.Clone(dirs[1 : i+1])
		for _, r := range dirs[i+1:] {
			_ = r.Close()
		}
		return &spot{dir: dirs[i], path: pathOf(parts[:i]), base: base, fi: fi, git: git, held: held}, nil
	}
	links := 0
	i := 0
	for i < len(parts) {
		c := parts[i]
		switch c {
		case "", ".":
			parts = slices.Delete(parts, i, i+1)
			continue
		case "..":
			if i == 0 {
				return fail(&grove.Error{Code: grove.PathEscape, Op: op, Path: name,
					Err: errors.New("a symlink leads outside the head")})
			}
			parts = slices.Delete(parts, i-1, i+1)
			_ = dirs[i].Close()
			dirs, infos = dirs[:i], infos[:i]
			i--
			continue
		}
		if i == 0 && c == ".git" {
			return fail(gitDenied(op, name))
		}
		dir := dirs[i]
		last := i == len(parts)-1
		fi, err := dir.Lstat(c)
		if err != nil && errors.Is(err, fs.ErrNotExist) && mode&makeDirs != 0 {
			if err := dir.Mkdir(c, perm&0o777); err != nil && !errors.Is(err, fs.ErrExist) {
				return fail(fsError(op, name, err))
			}
			fi, err = dir.Lstat(c)
		}
		if err != nil {
			if last && mode&mayMiss != 0 && errors.Is(err, fs.ErrNotExist) {
				return done(i, c, nil)
			}
			return fail(fsError(op, name, err))
		}
		if git != nil && os.SameFile(fi, git) {
			// A hard link to .git, or .git under another spelling.
			return fail(gitDenied(op, name))
		}
		if fi.Mode()&fs.ModeSymlink != 0 && (!last || mode&followLast != 0) {
			if links++; links > maxLinks {
				return fail(&grove.Error{Code: grove.InvalidArgument, Op: op, Path: name,
					Err: errors.New("too many levels of symbolic links")})
			}
			target, err := dir.Readlink(c)
			if err != nil {
				if errors.Is(err, syscall.EINVAL) || errors.Is(err, fs.ErrNotExist) {
					return fail(errChanged) // no longer a symlink
				}
				return fail(fsError(op, name, err))
			}
			if target == "" || path.IsAbs(target) {
				return fail(&grove.Error{Code: grove.PathEscape, Op: op, Path: name,
					Err: fmt.Errorf("symlink to %q leads outside the head", target)})
			}
			parts = slices.Concat(parts[:i], strings.Split(target, "/"), parts[i+1:])
			continue
		}
		if last {
			return done(i, c, fi)
		}
		if !fi.IsDir() {
			return fail(fsError(op, name, syscall.ENOTDIR))
		}
		sub, err := dir.OpenRoot(c)
		if err != nil {
			if errors.Is(err, syscall.ELOOP) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return fail(errChanged) // no longer the directory examined
			}
			return fail(fsError(op, name, err))
		}
		if st, err := sub.Stat("."); err != nil || !os.SameFile(st, fi) {
			_ = sub.Close()
			return fail(errChanged) // swapped since its Lstat
		}
		dirs, infos = append(dirs, sub), append(infos, fi)
		i++
	}
	if i == 0 {
		fi, err := d.root.Lstat(".")
		if err != nil {
			return fail(fsError(op, name, err))
		}
		return &spot{dir: d.root, path: ".", fi: fi, git: git}, nil
	}
	// The name led through its last element as a directory (a link
	// target ending in ".." or "."): the spot is that directory in its
	// parent.
	return done(i-1, parts[i-1], infos[i])
}

func pathOf(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// open opens the element at s for reading and checks that it is the file
// the resolution examined, and not .git. Only regular files and
// directories are opened: a FIFO (or a device) would block the open or
// the read with no context to end it, so it is InvalidArgument; the open
// itself never blocks (O_NONBLOCK, which changes nothing for a regular
// file or a directory).
func (d *FS) open(op, name string, s *spot, flag int) (*os.File, fs.FileInfo, error) {
	if s.fi == nil {
		return nil, nil, fsError(op, name, fs.ErrNotExist)
	}
	if !s.fi.Mode().IsRegular() && !s.fi.IsDir() {
		return nil, nil, &grove.Error{Code: grove.InvalidArgument, Op: op, Path: name,
			Err: fmt.Errorf("%s is not a regular file or a directory (%v)", name, s.fi.Mode().Type())}
	}
	flag |= syscall.O_NONBLOCK
	elem := s.base
	if s.isRoot() {
		elem = "."
	}
	f, err := s.dir.OpenFile(elem, os.O_RDONLY|flag, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return nil, nil, errChanged
		}
		return nil, nil, fsError(op, name, err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		_ = f.Close()
		return nil, nil, fsError(op, name, err)
	case !os.SameFile(st, s.fi):
		_ = f.Close()
		return nil, nil, errChanged
	case s.git != nil && os.SameFile(st, s.git):
		_ = f.Close()
		return nil, nil, gitDenied(op, name)
	}
	return f, st, nil
}

// isHeadRoot reports whether fi is the head's root directory.
func (d *FS) isHeadRoot(fi fs.FileInfo) bool {
	if !fi.IsDir() {
		return false
	}
	st, err := d.root.Stat(".")
	return err == nil && os.SameFile(st, fi)
}

func (d *FS) Open(name string) (fs.File, error) {
	if err := checkPath(d.op("open"), name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return retry(d.op("open"), name, func() (fs.File, error) {
		s, err := d.resolve(d.op("open"), name, followLast, 0)
		if err != nil {
			return nil, err
		}
		defer s.release()
		f, st, err := d.open(d.op("open"), name, s, 0)
		if err != nil {
			return nil, err
		}
		base := path.Base(name)
		if !st.IsDir() {
			return &file{f: f, name: base}, nil
		}
		return &dir_{f: f, name: base, hideGit: d.isHeadRoot(st)}, nil
	})
}

// file is an opened regular file: only the reading methods of its
// *os.File, and Stat under the name it was opened by.
type file struct {
	f    *os.File
	name string
}

func (f *file) Read(b []byte) (int, error)                { return f.f.Read(b) }
func (f *file) ReadAt(b []byte, off int64) (int, error)   { return f.f.ReadAt(b, off) }
func (f *file) Seek(off int64, whence int) (int64, error) { return f.f.Seek(off, whence) }
func (f *file) Close() error                              { return f.f.Close() }
func (f *file) Stat() (fs.FileInfo, error)                { return named(f.f.Stat())(f.name) }

// dir_ is an opened directory; the listing of the head's root hides
// .git.
type dir_ struct {
	f       *os.File
	name    string
	hideGit bool
}

func (d *dir_) Read(b []byte) (int, error) { return d.f.Read(b) }
func (d *dir_) Close() error               { return d.f.Close() }
func (d *dir_) Stat() (fs.FileInfo, error) { return named(d.f.Stat())(d.name) }

func (d *dir_) ReadDir(n int) ([]fs.DirEntry, error) {
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

// namedInfo is a FileInfo under the name it was asked for (a followed
// symlink's, not its target's).
type namedInfo struct {
	fs.FileInfo
	name string
}

func (n namedInfo) Name() string { return n.name }

func named(fi fs.FileInfo, err error) func(name string) (fs.FileInfo, error) {
	return func(name string) (fs.FileInfo, error) {
		if err != nil {
			return nil, err
		}
		return namedInfo{fi, name}, nil
	}
}

func (d *FS) Stat(name string) (fs.FileInfo, error) {
	return retry(d.op("stat"), name, func() (fs.FileInfo, error) {
		s, err := d.resolve(d.op("stat"), name, followLast, 0)
		if err != nil {
			return nil, err
		}
		s.release()
		if s.isRoot() {
			return s.fi, nil
		}
		return namedInfo{s.fi, path.Base(name)}, nil
	})
}

func (d *FS) Lstat(name string) (fs.FileInfo, error) {
	return retry(d.op("lstat"), name, func() (fs.FileInfo, error) {
		s, err := d.resolve(d.op("lstat"), name, 0, 0)
		if err != nil {
			return nil, err
		}
		s.release()
		if s.isRoot() {
			return s.fi, nil
		}
		return namedInfo{s.fi, path.Base(name)}, nil
	})
}

func (d *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := d.Open(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	defer f.Close()
	dir, ok := f.(*dir_)
	if !ok {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: d.op("readdir"), Path: name, Err: errors.New("not a directory")}
	}
	ents, err := dir.ReadDir(-1)
	if err != nil {
		return nil, fsError(d.op("readdir"), name, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

func (d *FS) ReadFile(name string) ([]byte, error) {
	data, _, err := d.readFile(d.op("readfile"), name)
	return data, err
}

func (d *FS) ReadFileDigest(name string) ([]byte, grove.Digest, error) {
	return d.readFile(d.op("readfile"), name)
}

func (d *FS) readFile(op, name string) ([]byte, grove.Digest, error) {
	data, err := retry(op, name, func() ([]byte, error) {
		s, err := d.resolve(op, name, followLast, 0)
		if err != nil {
			return nil, err
		}
		defer s.release()
		return d.read(op, name, s)
	})
	if err != nil {
		return nil, grove.Digest{}, err
	}
	return data, grove.DigestOf(data), nil
}

// read reads the whole element at s.
func (d *FS) read(op, name string, s *spot) ([]byte, error) {
	f, st, err := d.open(op, name, s, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.IsDir() {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: name, Err: errors.New("is a directory")}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fsError(op, name, err)
	}
	return data, nil
}

func (d *FS) ReadLink(name string) (string, error) {
	return retry(d.op("readlink"), name, func() (string, error) {
		s, err := d.resolve(d.op("readlink"), name, 0, 0)
		if err != nil {
			return "", err
		}
		defer s.release()
		if s.isRoot() || s.fi.Mode()&fs.ModeSymlink == 0 {
			return "", &grove.Error{Code: grove.InvalidArgument, Op: d.op("readlink"), Path: name, Err: errors.New("not a symbolic link")}
		}
		t, err := s.dir.Readlink(s.base) // one element: never followed
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, fs.ErrNotExist) {
			return "", errChanged
		}
		return t, fsError(d.op("readlink"), name, err)
	})
}

// writable resolves name for a write: where the file it leads to is, or
// would be created.
func (d *FS) writable(op, name string) (*spot, error) {
	s, err := d.resolve(op, name, followLast|mayMiss, 0)
	if err != nil {
		return nil, err
	}
	if s.isRoot() || s.fi != nil && s.fi.IsDir() {
		s.release()
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: name, Err: errors.New("is a directory")}
	}
	return s, nil
}

func (d *FS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	op := d.op("writefile")
	if err := d.deny(op, name); err != nil {
		return err
	}
	_, err := retry(op, name, func() (struct{}, error) {
		s, err := d.writable(op, name)
		if err != nil {
			return struct{}{}, err
		}
		defer s.release()
		return struct{}{}, d.write(op, name, s, data, perm)
	})
	return err
}

func (d *FS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect grove.Digest) error {
	op := d.op("writefileif")
	if err := d.deny(op, name); err != nil {
		return err
	}
	if err := checkPath(op, name); err != nil {
		return err
	}
	d.cas.Lock()
	defer d.cas.Unlock()
	// Another process's WriteFileIf on this head is waited for: its holder
	// is a live write (the kernel releases a dead one's lock).
	l, err := lock.Acquire(context.Background(), d.casLock, "compare-and-set write")
	if err != nil {
		return &grove.Error{Code: grove.CodeOf(err), Op: op, Path: name, Err: err}
	}
	defer l.Unlock()
	_, err = retry(op, name, func() (struct{}, error) {
		s, err := d.writable(op, name)
		if err != nil {
			return struct{}{}, err
		}
		defer s.release()
		var cur grove.Digest
		if s.fi != nil {
			old, err := d.read(op, name, s)
			if err != nil {
				return struct{}{}, err
			}
			cur = grove.DigestOf(old)
		}
		if cur != expect {
			return struct{}{}, &grove.Error{Code: grove.Conflict, Op: op, Path: name, Current: &cur,
				Err: fmt.Errorf("content is %s, the caller expected %s", cur, expect)}
		}
		return struct{}{}, d.write(op, name, s, data, perm)
	})
	return err
}

// write replaces the element at s atomically: a temporary file in the
// same directory, given the existing file's mode (or perm), renamed over
// it. Every call names one element of a directory held open, and neither
// the creation (O_EXCL) nor the rename follows a symlink there.
func (d *FS) write(op, name string, s *spot, data []byte, perm fs.FileMode) error {
	mode := perm & 0o777
	if s.fi != nil && s.fi.Mode().IsRegular() {
		mode = s.fi.Mode() & 0o777
	}
	d.writes.RLock()
	defer d.writes.RUnlock()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := TempPrefix + hex.EncodeToString(rnd[:])
	f, err := s.dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fsError(op, name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode) // not narrowed by the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.dir.Rename(tmp, s.base)
	}
	if err != nil {
		_ = s.dir.Remove(tmp)
		return fsError(op, name, err)
	}
	return nil
}

func (d *FS) MkdirAll(name string, perm fs.FileMode) error {
	op := d.op("mkdirall")
	if err := d.deny(op, name); err != nil {
		return err
	}
	_, err := retry(op, name, func() (struct{}, error) {
		s, err := d.resolve(op, name, followLast|makeDirs, perm)
		if err != nil {
			if grove.CodeOf(err) == grove.NotFound && d.fileOnPath(name) {
				return struct{}{}, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: name, Err: syscall.ENOTDIR}
			}
			return struct{}{}, err
		}
		s.release()
		if !s.fi.IsDir() {
			return struct{}{}, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: name, Err: syscall.ENOTDIR}
		}
		return struct{}{}, nil
	})
	return err
}

// fileOnPath reports whether a parent of name (or name) is something
// other than a directory: why a MkdirAll found no way through.
func (d *FS) fileOnPath(name string) bool {
	for p := name; p != "." && p != ""; p = path.Dir(p) {
		if fi, err := d.Stat(p); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}

func (d *FS) Remove(name string) error {
	op := d.op("remove")
	if err := d.deny(op, name); err != nil {
		return err
	}
	_, err := retry(op, name, func() (struct{}, error) {
		s, err := d.resolve(op, name, 0, 0)
		if err != nil {
			return struct{}{}, err
		}
		defer s.release()
		if s.isRoot() {
			return struct{}{}, &grove.Error{Code: grove.InvalidArgument, Op: d.op("remove"), Path: name, Err: errors.New("cannot remove the head's root")}
		}
		return struct{}{}, fsError(op, name, s.dir.Remove(s.base)) // one element: never followed
	})
	return err
}

func (d *FS) Rename(oldname, newname string) error {
	op := d.op("rename")
	if err := d.deny(op, oldname); err != nil {
		return err
	}
	if err := checkPath(op, oldname); err != nil {
		return err
	}
	if err := checkPath(op, newname); err != nil {
		return err
	}
	_, err := retry(op, oldname, func() (struct{}, error) {
		from, err := d.resolve(op, oldname, 0, 0)
		if err != nil {
			return struct{}{}, err
		}
		defer from.release()
		to, err := d.resolve(op, newname, mayMiss, 0)
		if err != nil {
			return struct{}{}, err
		}
		defer to.release()
		if from.isRoot() || to.isRoot() {
			return struct{}{}, &grove.Error{Code: grove.InvalidArgument, Op: d.op("rename"), Path: oldname, Err: errors.New("cannot rename the head's root")}
		}
		switch {
		case to.fi != nil && to.fi.IsDir():
			return struct{}{}, &grove.Error{Code: grove.FailedPrecondition, Op: d.op("rename"), Path: newname, Err: syscall.EISDIR}
		case to.fi != nil && from.fi.IsDir():
			return struct{}{}, &grove.Error{Code: grove.FailedPrecondition, Op: d.op("rename"), Path: newname, Err: syscall.ENOTDIR}
		case from.fi.IsDir() && strings.HasPrefix(path.Join(to.path, to.base)+"/", path.Join(from.path, from.base)+"/"):
			return struct{}{}, &grove.Error{Code: grove.InvalidArgument, Op: d.op("rename"), Path: newname, Err: errors.New("cannot move a directory into itself")}
		}
		if from.dir == to.dir {
			return struct{}{}, fsError(op, oldname, from.dir.Rename(from.base, to.base))
		}
		return struct{}{}, fsError(op, oldname, renameBetween(from.dir, from.base, to.dir, to.base))
	})
	return err
}

// renameBetween renames element oldname of directory from to element
// newname of directory to, with renameat(2) on the two directories held
// open (on Windows, its equivalent: see renameat_windows.go): a directory
// swapped for a symlink since the resolution cannot redirect it, and
// neither element is followed.
func renameBetween(from *os.Root, oldname string, to *os.Root, newname string) error {
	fd, err := from.Open(".")
	if err != nil {
		return err
	}
	defer fd.Close()
	td, err := to.Open(".")
	if err != nil {
		return err
	}
	defer td.Close()
	fc, err := fd.SyscallConn()
	if err != nil {
		return err
	}
	tc, err := td.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	cerr := fc.Control(func(ofd uintptr) {
		if cerr := tc.Control(func(nfd uintptr) {
			for {
				rerr = renameat(ofd, oldname, nfd, newname)
				if rerr != syscall.EINTR {
					return
				}
			}
		}); cerr != nil {
			rerr = cerr
		}
	})
	if cerr != nil {
		return cerr
	}
	if rerr != nil {
		return &os.LinkError{Op: "renameat", Old: oldname, New: newname, Err: rerr}
	}
	return nil
}

func (d *FS) Symlink(target, name string) error {
	op := d.op("symlink")
	if err := d.deny(op, name); err != nil {
		return err
	}
	if err := checkPath(op, name); err != nil {
		return err
	}
	if target == "" || path.IsAbs(target) {
		return &grove.Error{Code: grove.PathEscape, Op: op, Path: name, Err: fmt.Errorf("symlink target %q leads outside the head", target)}
	}
	_, err := retry(op, name, func() (struct{}, error) {
		s, err := d.resolve(op, name, mayMiss, 0)
		if err != nil {
			return struct{}{}, err
		}
		defer s.release()
		if s.isRoot() || s.fi != nil {
			// A link never replaces what is there: the name is taken.
			return struct{}{}, &grove.Error{Code: grove.AlreadyExists, Op: op, Path: name, Err: fs.ErrExist}
		}
		// Where the link would lead now. A dangling link is fine; one
		// leading out of the head or to .git is not. (Whatever it leads
		// to later is checked when it is used.)
		var parts []string
		if s.path != "." {
			parts = strings.Split(s.path, "/")
		}
		parts = append(parts, strings.Split(target, "/")...)
		t, err := d.resolveParts(op, name, parts, followLast|mayMiss, 0)
		switch {
		case err == nil:
			t.release()
		case errors.Is(err, errChanged):
			return struct{}{}, err
		case errors.Is(err, gitDirError{}), grove.CodeOf(err) == grove.PathEscape:
			return struct{}{}, err
		}
		err = fsError(op, name, s.dir.Symlink(target, s.base))
		if errors.Is(err, fs.ErrExist) {
			err.(*grove.Error).Code = grove.AlreadyExists // made meanwhile
		}
		return struct{}{}, err
	})
	return err
}

func (d *FS) Chmod(name string, mode fs.FileMode) error {
	op := d.op("chmod")
	if err := d.deny(op, name); err != nil {
		return err
	}
	_, err := retry(op, name, func() (struct{}, error) {
		s, err := d.resolve(op, name, followLast, 0)
		if err != nil {
			return struct{}{}, err
		}
		defer s.release()
		if s.isRoot() {
			return struct{}{}, fsError(op, name, d.root.Chmod(".", mode&0o777))
		}
		f, _, err := d.open(op, name, s, syscall.O_NONBLOCK)
		if err == nil {
			err = f.Chmod(mode & 0o777) // the very file examined
			_ = f.Close()
			return struct{}{}, fsError(op, name, err)
		}
		if grove.CodeOf(err) != grove.PermissionDenied || errors.Is(err, gitDirError{}) {
			return struct{}{}, err
		}
		// Not readable: chmod by name. Below the root no symlink swapped
		// in can lead to .git (s.dir's subtree does not hold it); in the
		// root, a change of .git's mode is undone.
		if err := s.dir.Chmod(s.base, mode&0o777); err != nil {
			return struct{}{}, fsError(op, name, err)
		}
		if s.path == "." && s.git != nil {
			if now, err := d.root.Lstat(".git"); err == nil && os.SameFile(now, s.git) && now.Mode() != s.git.Mode() {
				_ = d.root.Chmod(".git", s.git.Mode()&fs.ModePerm)
				return struct{}{}, gitDenied(op, name)
			}
		}
		if now, err := s.dir.Lstat(s.base); err != nil || !os.SameFile(now, s.fi) {
			return struct{}{}, errChanged
		}
		return struct{}{}, nil
	})
	return err
}
