package engine

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
)

// policyFS is a grove.FS under a session's policy. Every name is
// checked as given and as it resolves through the symlinks of the FS (a
// link may not carry a read or a write to a path the policy denies);
// listings show only what may be reached. The FS below keeps its own rules
// (containment, the head's .git): the policy only narrows them.
type policyFS struct {
	fs     grove.FS
	pol    *policy
	prefix string // where the FS's names sit in the policy's namespace: "" for the head, "roots/<name>" for a root

	// dirs caches where directories resolve, for a moment, so that a
	// walk resolves each directory once rather than every name's every
	// element. A write through this FS clears it. (What a shell changes
	// meanwhile is seen when an entry expires: the check and the use are
	// two steps anyway, as the Policy doc says.)
	mu   sync.Mutex
	dirs map[string]resolvedDir
}

type resolvedDir struct {
	to string
	at time.Time
}

// dirTTL is how long a directory's resolution is kept.
const dirTTL = 500 * time.Millisecond

func (p *policyFS) forgetDirs() {
	p.mu.Lock()
	p.dirs = nil
	p.mu.Unlock()
}

// resolvedDirOf is resolved for a directory, from the cache when fresh.
func (p *policyFS) resolvedDirOf(dir string) string {
	if dir == "." {
		return dir
	}
	p.mu.Lock()
	if r, ok := p.dirs[dir]; ok && time.Since(r.at) < dirTTL {
		p.mu.Unlock()
		return r.to
	}
	p.mu.Unlock()
	to := p.resolveFull(dir)
	p.mu.Lock()
	if p.dirs == nil || len(p.dirs) > 4096 {
		p.dirs = map[string]resolvedDir{}
	}
	p.dirs[dir] = resolvedDir{to: to, at: time.Now()}
	p.mu.Unlock()
	return to
}

// at is name in the policy's namespace.
func (p *policyFS) at(name string) string {
	if p.prefix == "" {
		return name
	}
	return path.Join(p.prefix, name)
}

var _ grove.FS = (*policyFS)(nil)

// resolved is name with the symlinks of its existing elements followed
// inside the FS, as far as they lead; a link that leaves the FS is left
// for the FS to refuse. Its directory comes from resolvedDirOf.
func (p *policyFS) resolved(name string) string {
	if name == "." {
		return name
	}
	dir := p.resolvedDirOf(path.Dir(name))
	cur := path.Join(dir, path.Base(name))
	if fi, err := p.fs.Lstat(cur); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return cur
	}
	return p.resolveFull(cur)
}

// resolveFull resolves name element by element.
func (p *policyFS) resolveFull(name string) string {
	if name == "." {
		return name
	}
	todo := strings.Split(name, "/")
	var done []string
	for hops := 0; len(todo) > 0; {
		el := todo[0]
		todo = todo[1:]
		cur := path.Join(append(done, el)...)
		fi, err := p.fs.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || hops >= 40 {
			done = append(done, el)
			continue
		}
		target, err := p.fs.ReadLink(cur)
		if err != nil || path.IsAbs(target) {
			done = append(done, el)
			continue
		}
		hops++
		joined := path.Clean(path.Join(path.Join(done...), target))
		if joined == ".." || strings.HasPrefix(joined, "../") {
			return name // leaves the FS: the FS refuses it
		}
		done = nil
		if joined != "." {
			todo = append(strings.Split(joined, "/"), todo...)
		}
	}
	if len(done) == 0 {
		return "."
	}
	return path.Join(done...)
}

// check checks name and what it resolves to.
func (p *policyFS) check(op, name string, isDir, write bool) error {
	if err := p.pol.check(op, p.at(name), isDir, write); err != nil {
		return err
	}
	if r := p.resolved(name); r != name {
		return p.pol.check(op, p.at(r), isDir, write)
	}
	return nil
}

// checkWrite checks a write to name: as given, where its parent resolves,
// and where the whole name resolves (a backend may write through a final
// link). Writes resolve afresh, never from the cache.
func (p *policyFS) checkWrite(op, name string, isDir bool) error {
	if err := p.pol.check(op, p.at(name), isDir, true); err != nil {
		return err
	}
	for _, n := range []string{path.Join(p.resolveFull(path.Dir(name)), path.Base(name)), p.resolveFull(name)} {
		if n != name {
			if err := p.pol.check(op, p.at(n), isDir, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRead checks a read of name, a directory or a file as it is.
func (p *policyFS) checkRead(op, name string) error {
	fi, err := p.fs.Stat(name)
	if err != nil {
		// The FS's own answer (NotFound, PathEscape), unless the policy
		// refuses the name anyway: then nothing is said of what is there.
		if perr := p.check(op, name, false, false); perr != nil {
			return perr
		}
		return err
	}
	return p.check(op, name, fi.IsDir(), false)
}

func (p *policyFS) Open(name string) (fs.File, error) {
	if err := p.checkRead("open", name); err != nil {
		return nil, err
	}
	f, err := p.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if d, ok := f.(fs.ReadDirFile); ok {
		return &policyDir{ReadDirFile: d, p: p, name: name}, nil
	}
	return f, nil
}

// policyDir is a directory opened through a policyFS: its listing shows
// only what the policy lets the caller reach.
type policyDir struct {
	fs.ReadDirFile
	p    *policyFS
	name string
}

func (d *policyDir) ReadDir(n int) ([]fs.DirEntry, error) {
	for {
		ents, err := d.ReadDirFile.ReadDir(n)
		kept := d.p.filter(d.p.resolved(d.name), ents)
		if len(kept) > 0 || err != nil || n <= 0 {
			return kept, err
		}
	}
}

func (p *policyFS) filter(dir string, ents []fs.DirEntry) []fs.DirEntry {
	kept := ents[:0]
	for _, e := range ents {
		if p.pol.visible(p.at(dir), e) {
			kept = append(kept, e)
		}
	}
	return kept
}

func (p *policyFS) Stat(name string) (fs.FileInfo, error) {
	if err := p.checkRead("stat", name); err != nil {
		return nil, err
	}
	return p.fs.Stat(name)
}

func (p *policyFS) Lstat(name string) (fs.FileInfo, error) {
	fi, err := p.fs.Lstat(name)
	if err != nil {
		return nil, err
	}
	if err := p.pol.check("lstat", p.at(name), fi.IsDir(), false); err != nil {
		return nil, err
	}
	if dir := path.Dir(name); dir != "." {
		if err := p.pol.check("lstat", p.at(path.Join(p.resolvedDirOf(dir), path.Base(name))), fi.IsDir(), false); err != nil {
			return nil, err
		}
	}
	return fi, nil
}

func (p *policyFS) ReadLink(name string) (string, error) {
	if err := p.pol.check("readlink", p.at(name), false, false); err != nil {
		return "", err
	}
	if dir := path.Dir(name); dir != "." {
		if err := p.pol.check("readlink", p.at(path.Join(p.resolvedDirOf(dir), path.Base(name))), false, false); err != nil {
			return "", err
		}
	}
	return p.fs.ReadLink(name)
}

func (p *policyFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := p.checkRead("readdir", name); err != nil {
		return nil, err
	}
	ents, err := p.fs.ReadDir(name)
	return p.filter(p.resolved(name), ents), err
}

// checkFile checks a read of name without a Stat: as a file, and as the
// directory it may be (a ReadFile of a denied directory says nothing of
// what is there).
func (p *policyFS) checkFile(op, name string) error {
	for _, n := range []string{name, p.resolved(name)} {
		if err := p.pol.check(op, p.at(n), false, false); err != nil {
			return err
		}
		if err := p.pol.check(op, p.at(n), true, false); err != nil {
			return err
		}
	}
	return nil
}

func (p *policyFS) ReadFile(name string) ([]byte, error) {
	if err := p.checkFile("readfile", name); err != nil {
		return nil, err
	}
	return p.fs.ReadFile(name)
}

func (p *policyFS) ReadFileDigest(name string) ([]byte, grove.Digest, error) {
	if err := p.checkFile("readfile", name); err != nil {
		return nil, grove.Digest{}, err
	}
	return p.fs.ReadFileDigest(name)
}

func (p *policyFS) WriteFile(name string, data []byte, perm fs.FileMode) error {
	defer p.forgetDirs()
	if err := p.checkWrite("writefile", name, false); err != nil {
		return err
	}
	return p.fs.WriteFile(name, data, perm)
}

func (p *policyFS) WriteFileIf(name string, data []byte, perm fs.FileMode, expect grove.Digest) error {
	defer p.forgetDirs()
	if err := p.checkWrite("writefileif", name, false); err != nil {
		return err
	}
	return p.fs.WriteFileIf(name, data, perm, expect)
}

func (p *policyFS) MkdirAll(name string, perm fs.FileMode) error {
	defer p.forgetDirs()
	if err := p.checkWrite("mkdirall", name, true); err != nil {
		return err
	}
	return p.fs.MkdirAll(name, perm)
}

func (p *policyFS) Remove(name string) error {
	defer p.forgetDirs()
	isDir := false
	if fi, err := p.fs.Lstat(name); err == nil {
		isDir = fi.IsDir()
	}
	if err := p.checkWrite("remove", name, isDir); err != nil {
		return err
	}
	return p.fs.Remove(name)
}

func (p *policyFS) Rename(oldname, newname string) error {
	defer p.forgetDirs()
	isDir := false
	if fi, err := p.fs.Lstat(oldname); err == nil {
		isDir = fi.IsDir()
	}
	if err := p.checkWrite("rename", oldname, isDir); err != nil {
		return err
	}
	if isDir && p.pol.hasPatterns() {
		// A directory carries whatever is below it, which the patterns
		// judge by its path: moving it could take a denied file out of
		// the rule that denies it.
		return &grove.Error{Code: grove.PermissionDenied, Op: "engine: rename", Path: oldname,
			Err: errors.New("a directory is not renamed under a path policy with patterns; move its files one by one")}
	}
	if err := p.checkWrite("rename", newname, isDir); err != nil {
		return err
	}
	return p.fs.Rename(oldname, newname)
}

func (p *policyFS) Symlink(target, name string) error {
	defer p.forgetDirs()
	if err := p.checkWrite("symlink", name, false); err != nil {
		return err
	}
	return p.fs.Symlink(target, name)
}

func (p *policyFS) Chmod(name string, mode fs.FileMode) error {
	isDir := false
	if fi, err := p.fs.Stat(name); err == nil {
		isDir = fi.IsDir()
	}
	if err := p.checkWrite("chmod", name, isDir); err != nil {
		return err
	}
	defer p.forgetDirs()
	return p.fs.Chmod(name, mode)
}
