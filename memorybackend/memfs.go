package memorybackend

import (
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/groveworks/grove"
)

// node is one entry of an in-memory tree: a directory, a regular file or a
// symlink (whose data is its target).
type node struct {
	mode  fs.FileMode
	data  []byte
	mtime time.Time
}

func (n *node) isDir() bool     { return n.mode.IsDir() }
func (n *node) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }

// memFS is a head's working tree in memory. Keys of nodes are clean slash
// paths; "." is the root directory.
type memFS struct {
	mu    sync.RWMutex
	nodes map[string]*node
	gone  bool // the head was destroyed or its files deleted
}

var _ grove.FS = (*memFS)(nil)

const maxSymlinkHops = 40

func newMemFS() *memFS {
	return &memFS{nodes: map[string]*node{".": {mode: fs.ModeDir | 0o755, mtime: time.Now()}}}
}

func parentOf(p string) string {
	d := path.Dir(p)
	if d == "" {
		return "."
	}
	return d
}

func joinPath(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

func fsErr(code grove.Code, op, name string, err error) error {
	return &grove.Error{Code: code, Op: "memorybackend: " + op, Path: name, Err: err}
}

func notExist(op, name string) error { return fsErr(grove.NotFound, op, name, fs.ErrNotExist) }

// resolve finds the node name refers to, following symlinks in every
// element but the last, and in the last too when follow is set. It returns
// the resolved path; when only the last element is missing it returns the
// path it would have, with a NotFound error (an empty path when an earlier
// element is missing). Callers hold m.mu.
func (m *memFS) resolve(op, name string, follow bool) (string, *node, error) {
	if err := grove.CheckPath(op, name); err != nil {
		return "", nil, fsErrFrom(err)
	}
	if m.gone {
		return "", nil, fsErr(grove.NotFound, op, name, errGone)
	}
	var parts []string
	if name != "." {
		parts = strings.Split(name, "/")
	}
	return m.walk(op, name, parts, follow, false, 0)
}

// walk resolves the elements parts (which, from a symlink target, may hold
// "." and ".."), as the kernel does: a symlink's target is relative to the
// directory holding the link, and ".." leaves the directory reached so
// far. A resolution leading above the root is PathEscape; one reaching the
// root's .git — by any path or link — is PermissionDenied, as CheckPath
// answers for the name .git itself. With mkdir, missing elements are
// created as directories with perm. Callers hold m.mu.
func (m *memFS) walk(op, name string, parts []string, follow, mkdir bool, perm fs.FileMode) (string, *node, error) {
	parts = slices.Clone(parts)
	hops := 0
	i := 0
	for i < len(parts) {
		c := parts[i]
		switch c {
		case "", ".":
			parts = slices.Delete(parts, i, i+1)
			continue
		case "..":
			if i == 0 {
				return "", nil, fsErr(grove.PathEscape, op, name, textError("a symlink leads outside the head"))
			}
			parts = slices.Delete(parts, i-1, i+1)
			i--
			continue
		}
		if i == 0 && c == ".git" {
			return "", nil, fsErr(grove.PermissionDenied, op, name, errGitDir)
		}
		p := joinPath(pathOf(parts[:i]), c)
		n := m.nodes[p]
		last := i == len(parts)-1
		if n == nil && mkdir {
			n = &node{mode: fs.ModeDir | perm&fs.ModePerm, mtime: time.Now()}
			m.nodes[p] = n
		}
		if n == nil {
			if !last {
				p = ""
			}
			return p, nil, notExist(op, name)
		}
		if n.isSymlink() && (!last || follow) {
			hops++
			if hops > maxSymlinkHops {
				return "", nil, fsErr(grove.InvalidArgument, op, name, errLoop)
			}
			target := string(n.data)
			if target == "" || path.IsAbs(target) {
				return "", nil, fsErr(grove.PathEscape, op, name, textError("symlink target "+target+" leads outside the head"))
			}
			parts = slices.Concat(parts[:i], strings.Split(target, "/"), parts[i+1:])
			continue
		}
		if last {
			return p, n, nil
		}
		if !n.isDir() {
			if mkdir {
				return "", nil, fsErr(grove.FailedPrecondition, op, name, syscall.ENOTDIR)
			}
			return "", nil, notExist(op, name)
		}
		i++
	}
	// Every element led through a directory (or there were none).
	p := pathOf(parts)
	return p, m.nodes[p], nil
}

func pathOf(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// fsErrFrom gives a CheckPath error the package's prefix.
func fsErrFrom(err error) error {
	if e, ok := err.(*grove.Error); ok {
		e.Op = "memorybackend: " + e.Op
	}
	return err
}

// target returns the path a write to name lands on: the resolved file if it
// exists (following symlinks), or where it would be created. The parent
// must be an existing directory. Callers hold m.mu.
func (m *memFS) target(op, name string) (string, *node, error) {
	p, n, err := m.resolve(op, name, true)
	if err == nil {
		if n.isDir() {
			return "", nil, fsErr(grove.FailedPrecondition, op, name, errIsDir)
		}
		return p, n, nil
	}
	if grove.CodeOf(err) != grove.NotFound || p == "" {
		return "", nil, err
	}
	return p, nil, nil
}

func (m *memFS) Open(name string) (fs.File, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, n, err := m.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	info := fileInfo{name: path.Base(name), n: n}
	if name == "." {
		info.name = "."
	}
	if n.isDir() {
		return &memDir{info: info, entries: m.entries(p)}, nil
	}
	return &memFile{info: info, r: bytes.NewReader(slices.Clone(n.data))}, nil
}

// entries lists the directory at resolved path p, sorted by name, hiding
// .git at the root. Callers hold m.mu.
func (m *memFS) entries(p string) []fs.DirEntry {
	var out []fs.DirEntry
	for k, n := range m.nodes {
		if k == "." || parentOf(k) != p {
			continue
		}
		if p == "." && k == ".git" {
			continue
		}
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: path.Base(k), n: n}))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, n, err := m.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return fileInfo{name: path.Base(name), n: n}, nil
}

func (m *memFS) Lstat(name string) (fs.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, n, err := m.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return fileInfo{name: path.Base(name), n: n}, nil
}

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, n, err := m.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, fsErr(grove.FailedPrecondition, "readdir", name, errNotDir)
	}
	return m.entries(p), nil
}

func (m *memFS) ReadFile(name string) ([]byte, error) {
	data, _, err := m.readFile("readfile", name)
	return data, err
}

func (m *memFS) ReadFileDigest(name string) ([]byte, grove.Digest, error) {
	return m.readFile("readfile", name)
}

func (m *memFS) readFile(op, name string) ([]byte, grove.Digest, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, n, err := m.resolve(op, name, true)
	if err != nil {
		return nil, grove.Digest{}, err
	}
	if n.isDir() {
		return nil, grove.Digest{}, fsErr(grove.FailedPrecondition, op, name, errIsDir)
	}
	return slices.Clone(n.data), grove.DigestOf(n.data), nil
}

func (m *memFS) ReadLink(name string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, n, err := m.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if !n.isSymlink() {
		return "", fsErr(grove.InvalidArgument, "readlink", name, errNotLink)
	}
	return string(n.data), nil
}

func (m *memFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.write("writefile", name, data, perm)
}

func (m *memFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect grove.Digest) error {
	const op = "writefile"
	m.mu.Lock()
	defer m.mu.Unlock()
	_, n, err := m.target(op, name)
	if err != nil {
		return err
	}
	var cur grove.Digest
	if n != nil {
		cur = grove.DigestOf(n.data)
	}
	if cur != expect {
		e := fsErr(grove.Conflict, op, name, errStale).(*grove.Error)
		e.Current = &cur
		return e
	}
	return m.write(op, name, data, perm)
}

// write writes data at name; callers hold m.mu for writing.
func (m *memFS) write(op, name string, data []byte, perm fs.FileMode) error {
	p, n, err := m.target(op, name)
	if err != nil {
		return err
	}
	mode := perm & fs.ModePerm
	if n != nil {
		mode = n.mode & fs.ModePerm
	}
	m.nodes[p] = &node{mode: mode, data: slices.Clone(data), mtime: time.Now()}
	return nil
}

func (m *memFS) MkdirAll(name string, perm fs.FileMode) error {
	const op = "mkdir"
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := grove.CheckPath(op, name); err != nil {
		return fsErrFrom(err)
	}
	if m.gone {
		return fsErr(grove.NotFound, op, name, errGone)
	}
	var parts []string
	if name != "." {
		parts = strings.Split(name, "/")
	}
	_, n, err := m.walk(op, name, parts, true, true, perm)
	if err != nil {
		return err
	}
	if !n.isDir() {
		return fsErr(grove.FailedPrecondition, op, name, syscall.ENOTDIR)
	}
	return nil
}

func (m *memFS) Remove(name string) error {
	const op = "remove"
	m.mu.Lock()
	defer m.mu.Unlock()
	p, n, err := m.resolve(op, name, false)
	if err != nil {
		return err
	}
	if p == "." {
		return fsErr(grove.InvalidArgument, op, name, fs.ErrInvalid)
	}
	if n.isDir() && len(m.entries(p)) > 0 {
		return fsErr(grove.FailedPrecondition, op, name, errNotEmpty)
	}
	delete(m.nodes, p)
	return nil
}

func (m *memFS) Rename(oldname, newname string) error {
	const op = "rename"
	m.mu.Lock()
	defer m.mu.Unlock()
	oldp, n, err := m.resolve(op, oldname, false)
	if err != nil {
		return err
	}
	if oldp == "." {
		return fsErr(grove.InvalidArgument, op, oldname, fs.ErrInvalid)
	}
	if err := grove.CheckPath(op, newname); err != nil {
		return fsErrFrom(err)
	}
	np, nn, err := m.resolve(op, newname, false)
	switch {
	case err == nil && nn.isDir():
		return fsErr(grove.FailedPrecondition, op, newname, syscall.EISDIR)
	case err == nil && n.isDir():
		return fsErr(grove.FailedPrecondition, op, newname, syscall.ENOTDIR)
	case err == nil:
	case grove.CodeOf(err) != grove.NotFound || np == "":
		return err
	}
	if np == oldp {
		return nil
	}
	if n.isDir() && strings.HasPrefix(np, oldp+"/") {
		return fsErr(grove.InvalidArgument, op, newname, textError("cannot move a directory into itself"))
	}
	moved := map[string]*node{np: n}
	for k, v := range m.nodes {
		if strings.HasPrefix(k, oldp+"/") {
			moved[np+k[len(oldp):]] = v
			delete(m.nodes, k)
		}
	}
	delete(m.nodes, oldp)
	for k, v := range moved {
		m.nodes[k] = v
	}
	return nil
}

// Symlink refuses a target that leads outside the head or to .git now;
// a link that only later resolves to .git is refused when used.
func (m *memFS) Symlink(target, name string) error {
	const op = "symlink"
	m.mu.Lock()
	defer m.mu.Unlock()
	if target == "" || path.IsAbs(target) {
		return fsErr(grove.PathEscape, op, name, textError("symlink target "+target+" leads outside the head"))
	}
	p, _, err := m.resolve(op, name, false)
	switch {
	case err == nil:
		return fsErr(grove.AlreadyExists, op, name, fs.ErrExist)
	case grove.CodeOf(err) != grove.NotFound || p == "" || m.gone:
		return err
	}
	var parts []string
	if dir := parentOf(p); dir != "." {
		parts = strings.Split(dir, "/")
	}
	parts = append(parts, strings.Split(target, "/")...)
	if _, _, err := m.walk(op, name, parts, true, false, 0); err != nil {
		if c := grove.CodeOf(err); c == grove.PathEscape || c == grove.PermissionDenied {
			return err
		}
	}
	m.nodes[p] = &node{mode: fs.ModeSymlink | 0o777, data: []byte(target), mtime: time.Now()}
	return nil
}

func (m *memFS) Chmod(name string, mode fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, n, err := m.resolve("chmod", name, true)
	if err != nil {
		return err
	}
	c := *n
	c.mode = n.mode&^fs.ModePerm | mode&fs.ModePerm
	m.nodes[p] = &c
	return nil
}

// snapshot returns a copy of every node, for a checkpoint or a restore to
// work on without holding the lock. Node values are never mutated in place,
// so sharing them is safe.
func (m *memFS) snapshot() (map[string]*node, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.gone {
		return nil, fsErr(grove.NotFound, "snapshot", ".", errGone)
	}
	return cloneNodes(m.nodes), nil
}

func cloneNodes(src map[string]*node) map[string]*node {
	out := make(map[string]*node, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out
}

type fileInfo struct {
	name string
	n    *node
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return int64(len(fi.n.data)) }
func (fi fileInfo) Mode() fs.FileMode  { return fi.n.mode }
func (fi fileInfo) ModTime() time.Time { return fi.n.mtime }
func (fi fileInfo) IsDir() bool        { return fi.n.isDir() }
func (fi fileInfo) Sys() any           { return nil }

type memFile struct {
	info fileInfo
	r    *bytes.Reader
}

func (f *memFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *memFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *memFile) Close() error               { return nil }

// Seek and ReadAt let fstest.TestFS check the file as an io.ReadSeeker.
func (f *memFile) Seek(off int64, whence int) (int64, error) { return f.r.Seek(off, whence) }
func (f *memFile) ReadAt(b []byte, off int64) (int, error)   { return f.r.ReadAt(b, off) }

type memDir struct {
	info    fileInfo
	entries []fs.DirEntry
	off     int
}

func (d *memDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *memDir) Close() error               { return nil }
func (d *memDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.name, Err: errIsDir}
}

func (d *memDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	d.off += n
	return rest[:n], nil
}

type textError string

func (e textError) Error() string { return string(e) }

const (
	errGone     = textError("the head's files are gone")
	errLoop     = textError("too many levels of symbolic links")
	errIsDir    = textError("is a directory")
	errNotDir   = textError("not a directory")
	errNotLink  = textError("not a symbolic link")
	errNotEmpty = textError("directory not empty")
	errStale    = textError("content changed since it was read")
	errGitDir   = gitDirError("the git directory is not reachable through the FS")
)

// gitDirError is the cause of a refusal to reach .git through a link. It
// matches fs.ErrPermission, as CheckPath's refusal of the name .git does.
type gitDirError string

func (e gitDirError) Error() string      { return string(e) }
func (gitDirError) Is(target error) bool { return target == fs.ErrPermission }
