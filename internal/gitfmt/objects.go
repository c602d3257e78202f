package gitfmt

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/regfile"
)

// Store reads a repository's objects and refs from its files, and writes
// commit objects into it, with no process. Every reader answers ok=false
// for anything it does not handle exactly as git would, and its caller
// then asks git: the fast path is an optimization, never a second opinion.
// A Store is safe for concurrent use.
type Store struct {
	dir      string // the common git dir
	fallback Source

	refsOnce sync.Once
	fileRefs bool // refs are files (see FilesRefs)
	packedMu sync.Mutex
	packed   *Packed // packed-refs as last read

	trees   treeCache   // trees read in-process
	packs   packsCache  // pack indexes read by Has
	commits commitCache // commits read in-process
}

// Source gives an object a Store does not find loose (a packed one), up
// to max bytes of content: git cat-file --batch, for one. ok is false if
// it cannot.
type Source func(ctx context.Context, id string, max int) (typ string, body []byte, ok bool)

// NewStore returns a Store of the repository whose common git directory is
// dir (canonical), asking fallback, when not nil, for the objects that are
// not loose.
func NewStore(dir string, fallback Source) *Store {
	return &Store{dir: dir, fallback: fallback}
}

// fallbackObject asks the fallback for object id.
func (s *Store) fallbackObject(ctx context.Context, id string, max int) (typ string, body []byte, ok bool) {
	if s.fallback == nil {
		return "", nil, false
	}
	return s.fallback(ctx, id, max)
}

// Blob returns the content of the blob id when it is at most max bytes:
// its loose object, or else from the fallback. ok is false for an object
// that is not a blob, a larger one, or one neither gives.
func (s *Store) Blob(ctx context.Context, id string, max int) ([]byte, bool) {
	typ, body, ok := s.Loose(id, max)
	if !ok {
		typ, body, ok = s.fallbackObject(ctx, id, max)
	}
	if !ok || typ != "blob" || len(body) > max {
		return nil, false
	}
	return body, true
}

// MaxCommitSize bounds the commit objects read in-process: a larger one
// (nothing git writes for grove) is left to git.
const MaxCommitSize = 1 << 20

// MaxPackedRefs bounds the packed-refs file read in-process; a larger one
// is left to git.
const MaxPackedRefs = 64 << 20

// IsSHA1 reports whether s is a full SHA-1 object ID in lower-case hex.
func IsSHA1(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Loose returns the type and content of the loose object id,
// verified against its name; ok is false if there is no such loose
// object (it may be packed), or it does not read as one.
func (s *Store) Loose(id string, max int) (typ string, body []byte, ok bool) {
	if !IsSHA1(id) {
		return "", nil, false
	}
	data, err := regfile.Read(filepath.Join(s.dir, "objects", id[:2], id[2:]), int64(max)+1024)
	if err != nil {
		return "", nil, false
	}
	raw, err := inflate(data, max+64)
	if err != nil {
		return "", nil, false
	}
	head, body, found := bytes.Cut(raw, []byte{0})
	typ, size, _ := strings.Cut(string(head), " ")
	if !found || size != strconv.Itoa(len(body)) {
		return "", nil, false
	}
	if sum := sha1.Sum(raw); hex.EncodeToString(sum[:]) != id {
		return "", nil, false
	}
	return typ, body, true
}

// inflaters are zlib readers for inflate to reuse: a new one allocates
// its window and tables, which cost more than inflating a small tree.
var inflaters sync.Pool

// inflate returns the zlib stream data decompressed, or an error if it is
// not one or holds more than limit bytes.
func inflate(data []byte, limit int) ([]byte, error) {
	src := bytes.NewReader(data)
	var zr io.ReadCloser
	if v, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := v.(zlib.Resetter).Reset(src, nil); err != nil {
			inflaters.Put(v)
			return nil, err
		}
		zr = v
	} else {
		var err error
		if zr, err = zlib.NewReader(src); err != nil {
			return nil, err
		}
	}
	defer inflaters.Put(zr)
	// Trees, the objects read most, hardly compress (their IDs do not).
	out := make([]byte, 0, min(2*len(data)+512, limit+1))
	for {
		if len(out) == cap(out) {
			out = append(out, 0)[:len(out)]
		}
		n, err := zr.Read(out[len(out):min(cap(out), limit+1)])
		out = out[:len(out)+n]
		if len(out) > limit {
			return nil, fmt.Errorf("a loose object over %d bytes", limit)
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Commit reads the commit id in-process, from its loose object.
func (s *Store) Commit(id string) (*object.Commit, bool) {
	if _, err := os.Lstat(filepath.Join(s.dir, "shallow")); !errors.Is(err, fs.ErrNotExist) {
		return nil, false // a shallow repository: git hides some parents
	}
	if c, ok := s.commits.get(id); ok {
		return c, true
	}
	typ, body, ok := s.Loose(id, MaxCommitSize)
	if !ok || typ != "commit" || !plainCommitHeader(body) {
		return nil, false
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.CommitObject)
	if _, err := obj.Write(body); err != nil {
		return nil, false
	}
	c := &object.Commit{}
	if err := c.Decode(obj); err != nil || c.Encoding != "" && !strings.EqualFold(string(c.Encoding), "UTF-8") ||
		c.TreeHash.IsZero() || len(c.ParentHashes) > 0 && c.ParentHashes[0].IsZero() {
		return nil, false
	}
	s.commits.put(id, c)
	return c, true
}

// commitCache remembers the commits read in-process, by ID: a commit never
// changes, and a status, a checkpoint or a restore each read the head's
// last one. The commits are shared: no caller changes one.
type commitCache struct {
	mu      sync.Mutex
	commits map[string]*object.Commit
}

// maxCachedCommits bounds commitCache; when full, it starts over.
const maxCachedCommits = 1024

func (c *commitCache) get(id string) (*object.Commit, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cm, ok := c.commits[id]
	return cm, ok
}

func (c *commitCache) put(id string, cm *object.Commit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.commits == nil || len(c.commits) >= maxCachedCommits {
		c.commits = map[string]*object.Commit{}
	}
	c.commits[id] = cm
}

// plainCommitHeader reports whether a commit's header has the shape git
// writes and go-git reads as git does: a tree line, the parent lines right
// after it, one author and one committer line (each naming one address),
// at most one encoding line.
func plainCommitHeader(body []byte) bool {
	header, _, _ := bytes.Cut(body, []byte("\n\n"))
	lines := strings.Split(string(header), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "tree ") || !IsSHA1(lines[0][5:]) {
		return false
	}
	i := 1
	for ; i < len(lines) && strings.HasPrefix(lines[i], "parent "); i++ {
		if !IsSHA1(lines[i][7:]) {
			return false
		}
	}
	authors, committers, encodings := 0, 0, 0
	for _, l := range lines[i:] {
		key, value, _ := strings.Cut(l, " ")
		switch key {
		case "author", "committer":
			if strings.Count(value, "<") != 1 || strings.Count(value, ">") != 1 {
				return false
			}
			if key == "author" {
				authors++
			} else {
				committers++
			}
		case "encoding":
			encodings++
		case "tree", "parent":
			return false
		}
	}
	return authors == 1 && committers == 1 && encodings <= 1
}

// CommitTree returns the tree of commit id.
func (s *Store) CommitTree(id string) (string, bool) {
	c, ok := s.Commit(id)
	if !ok {
		return "", false
	}
	return c.TreeHash.String(), true
}

// Ref returns the object ID a branch or grove ref points at, read from
// its loose file or, failing that, packed-refs, as git reads it; ok is
// false for a symbolic ref, a name outside refs/heads/ and refs/grove/ or
// with a component git would refuse, or anything unreadable.
func (s *Store) Ref(name string) (string, bool) {
	if !PlainRefName(name) {
		return "", false
	}
	if !s.FilesRefs() {
		return "", false
	}
	path := filepath.Join(s.dir, filepath.FromSlash(name))
	// A symlink among the loose refs is a symbolic ref to git: git
	// answers.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return "", false
	}
	data, err := regfile.Read(path, 4096)
	switch {
	case err == nil:
		v := strings.TrimRight(string(data), "\n")
		return v, IsSHA1(v)
	case !errors.Is(err, os.ErrNotExist):
		return "", false
	}
	p, ok := s.PackedRefs()
	if !ok {
		return "", false
	}
	v, found := p.Refs[name]
	return v, found
}

// BranchCommit resolves rev as git rev-parse resolves it to a commit when
// rev is a full branch or grove ref name, or the short name of a branch
// that git's earlier rules do not take (no <rev> in the git dir, no
// refs/<rev>, no refs/tags/<rev>, loose or packed); ok is false when git
// must answer (any other revision, a ref that is not plain, a commit that
// is not a loose one of the shape git writes).
func (s *Store) BranchCommit(rev string) (string, bool) {
	ref := rev
	if !PlainRefName(ref) {
		ref = "refs/heads/" + rev
		if !PlainRefName(ref) || !s.FilesRefs() {
			return "", false
		}
		p, ok := s.PackedRefs()
		if !ok {
			return "", false
		}
		for _, earlier := range []string{rev, "refs/" + rev, "refs/tags/" + rev} {
			if _, found := p.Refs[earlier]; found {
				return "", false
			}
			if _, err := os.Lstat(filepath.Join(s.dir, filepath.FromSlash(earlier))); !errors.Is(err, fs.ErrNotExist) {
				return "", false
			}
		}
	}
	id, ok := s.Ref(ref)
	if !ok {
		return "", false
	}
	if _, ok := s.Commit(id); !ok {
		return "", false
	}
	return id, true
}

// PlainRefName reports whether name is a branch or grove ref whose every
// component is one git accepts and that names the same file on every
// system: letters, digits and "-_.+/", no empty, dot-led or ".lock"
// component, no "..".
func PlainRefName(name string) bool {
	rest, ok := strings.CutPrefix(name, "refs/heads/")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "refs/grove/"); !ok {
			return false
		}
	}
	for _, c := range strings.Split(rest, "/") {
		if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") || strings.HasSuffix(c, ".") || strings.Contains(c, "..") {
			return false
		}
		for i := 0; i < len(c); i++ {
			if b := c[i]; !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.' || b == '+') {
				return false
			}
		}
	}
	return true
}

// Packed is a parse of Packed-refs: every ref it names, and for each head
// the greatest name under its checkpoint prefix.
type Packed struct {
	sig  fileSig
	Refs map[string]string
	Last map[string]string // head ID → greatest ref name in refs/grove/<id>/
}

// fileSig tells one version of a file from another: git replaces
// packed-refs by rename, so a new version is a new file.
type fileSig struct{ fi os.FileInfo }

func sigOf(path string) fileSig {
	fi, err := os.Stat(path)
	if err != nil {
		return fileSig{}
	}
	return fileSig{fi}
}

func (s fileSig) exists() bool { return s.fi != nil }

func (s fileSig) same(o fileSig) bool {
	if s.fi == nil || o.fi == nil {
		return s.fi == nil && o.fi == nil
	}
	return os.SameFile(s.fi, o.fi) && s.fi.Size() == o.fi.Size() && s.fi.ModTime().Equal(o.fi.ModTime())
}

// PackedRefs returns packed-refs as it is now, parsed once per version of
// the file. git replaces the file by rename, so a new version has a new
// inode.
func (s *Store) PackedRefs() (*Packed, bool) {
	path := filepath.Join(s.dir, "packed-refs")
	sig := sigOf(path)
	s.packedMu.Lock()
	defer s.packedMu.Unlock()
	if s.packed != nil && s.packed.sig.same(sig) {
		return s.packed, true
	}
	p := &Packed{sig: sig, Refs: map[string]string{}, Last: map[string]string{}}
	if sig.exists() {
		if sig.fi.Size() > MaxPackedRefs {
			return nil, false
		}
		data, err := regfile.Read(path, MaxPackedRefs)
		if err != nil || !sigOf(path).same(sig) {
			return nil, false
		}
		for len(data) > 0 {
			var line []byte
			line, data, _ = bytes.Cut(data, []byte("\n"))
			if len(line) == 0 || line[0] == '#' || line[0] == '^' {
				continue
			}
			id, name, ok := strings.Cut(string(line), " ")
			if !ok || !IsSHA1(id) {
				return nil, false
			}
			p.Refs[name] = id
			if rest, ok := strings.CutPrefix(name, "refs/grove/"); ok {
				if head, _, ok := strings.Cut(rest, "/"); ok && name > p.Last[head] {
					p.Last[head] = name
				}
			}
		}
	}
	s.packed = p
	return p, true
}

// plainIdent reports whether a name or an e-mail address is one git
// writes into a commit as it is: not empty, no byte below 0x20, no angle
// bracket, nothing at either end that git strips ("crud").
func plainIdent(s string) bool {
	if s == "" || strings.ContainsAny(s, "<>") || isCrud(s[0]) || isCrud(s[len(s)-1]) || !gitUTF8(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// gitUTF8 reports whether git's commit-tree keeps s as it is: valid UTF-8
// with none of the noncharacters git re-encodes (U+FDD0–U+FDEF, and
// U+xxFFFE and U+xxFFFF in every plane).
func gitUTF8(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r&0xFFFE == 0xFFFE || 0xFDD0 <= r && r <= 0xFDEF {
			return false
		}
	}
	return true
}

// isCrud is git's crud(): what ident.c strips from both ends of a name.
func isCrud(c byte) bool {
	return c <= 32 || c == '.' || c == ',' || c == ':' || c == ';' || c == '<' || c == '>' || c == '"' || c == '\\' || c == '\''
}

// WriteCommit writes, as a loose object, the commit git commit-tree would
// write for tree, parent ("" for a root commit), the author and committer
// at when (whole seconds, UTC) and msg, and returns its ID. ok is false, with nothing
// written, when git must write it instead: an identity git would rewrite,
// a message with a NUL or that git would re-encode (not UTF-8, or a
// noncharacter), a SHA-256 repository, an object directory that is not
// there yet or cannot be written. (The runner fixes i18n.commitEncoding
// to UTF-8, so git writes no encoding header either.)
func (s *Store) WriteCommit(tree, parent string, author, committer grove.Signature, when time.Time, msg string) (string, bool) {
	if !IsSHA1(tree) || parent != "" && !IsSHA1(parent) || strings.IndexByte(msg, 0) >= 0 || !gitUTF8(msg) ||
		!plainIdent(author.Name) || !plainIdent(author.Email) || !plainIdent(committer.Name) || !plainIdent(committer.Email) {
		return "", false
	}
	at := strconv.FormatInt(when.Unix(), 10) + " +0000"
	if parent != "" {
		parent = "parent " + parent + "\n"
	}
	body := fmt.Sprintf("tree %s\n%sauthor %s <%s> %s\ncommitter %s <%s> %s\n\n%s",
		tree, parent, author.Name, author.Email, at, committer.Name, committer.Email, at, msg)
	raw := append(fmt.Appendf(nil, "commit %d\x00", len(body)), body...)
	sum := sha1.Sum(raw)
	id := hex.EncodeToString(sum[:])
	if err := s.writeLoose(id, raw); err != nil {
		return "", false
	}
	return id, true
}

// WriteBlob writes data as a loose blob, the object git hash-object -w
// --no-filters writes, and returns its ID: SHA-1, or SHA-256 where hashLen
// is 32. It fails, with nothing written, where writeLoose leaves the
// object to git (a shared repository's new fan-out directory).
func (s *Store) WriteBlob(data []byte, hashLen int) (string, error) {
	raw := append(fmt.Appendf(nil, "blob %d\x00", len(data)), data...)
	hh := NewHash(hashLen)
	hh.Write(raw)
	id := hex.EncodeToString(hh.Sum(nil))
	return id, s.writeLoose(id, raw)
}

// zlibWriters are writeLoose's compressors: a new one allocates and
// clears most of a megabyte, more than compressing a tree costs.
var zlibWriters = sync.Pool{New: func() any { return zlib.NewWriter(nil) }}

// writeLoose stores raw (an object's header and content) as the loose
// object id, as git does: compressed into a temporary file beside it (its
// mode 0444 less the umask), then renamed into place, so that a reader
// sees the whole object or none. A valid object already there is kept;
// anything else there is replaced. A missing fan-out directory is made
// as git makes it, except in a shared repository (left to git). All of
// it goes through os.Root on the object directory, so no link leads it
// elsewhere.
func (s *Store) writeLoose(id string, raw []byte) error {
	objects := filepath.Join(s.dir, "objects")
	if fi, err := os.Lstat(objects); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", objects)
	}
	root, err := os.OpenRoot(objects)
	if err != nil {
		return err
	}
	defer root.Close()
	dir, final := id[:2], id[:2]+"/"+id[2:]
	if fi, err := root.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		// git makes it 0777 less the umask, as Mkdir does, unless the
		// repository is shared (core.sharedRepository: the object
		// directory is group-writable or setgid), where git sets the
		// group's permissions itself: then git writes the object.
		if ofi, err := os.Lstat(objects); err != nil || ofi.Mode()&(fs.ModeSetgid|0o020) != 0 {
			return fmt.Errorf("a shared repository: git makes %s", dir)
		}
		if err := root.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	} else if err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if typ, _, ok := s.Loose(id, len(raw)); ok && strings.HasPrefix(string(raw), typ+" ") {
		return nil
	}
	var buf bytes.Buffer
	zw := zlibWriters.Get().(*zlib.Writer)
	zw.Reset(&buf)
	_, err = zw.Write(raw)
	if err == nil {
		err = zw.Close()
	}
	zlibWriters.Put(zw)
	if err != nil {
		return err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := fmt.Sprintf("%s/tmp_obj_%d_%x", dir, os.Getpid(), rnd)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, final)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// FilesRefs reports whether the repository keeps its refs as files (loose
// and packed-refs), the only format read in-process; a reftable
// repository is left to git.
func (s *Store) FilesRefs() bool {
	s.refsOnce.Do(func() {
		_, err := os.Lstat(filepath.Join(s.dir, "reftable"))
		fi, herr := os.Lstat(filepath.Join(s.dir, "refs", "heads"))
		s.fileRefs = errors.Is(err, fs.ErrNotExist) && herr == nil && fi.IsDir()
	})
	return s.fileRefs
}

// TreeOf returns the tree of commit id: read in-process from its loose
// object, or else from the fallback.
func (s *Store) TreeOf(ctx context.Context, id string) (string, bool) {
	if tree, ok := s.CommitTree(id); ok {
		return tree, true
	}
	typ, body, ok := s.fallbackObject(ctx, id, MaxCommitSize)
	if !ok || typ != "commit" {
		return "", false
	}
	// A commit's first line names its tree.
	line, _, _ := strings.Cut(string(body), "\n")
	tree, found := strings.CutPrefix(line, "tree ")
	if !found || !IsSHA1(tree) {
		return "", false
	}
	return tree, true
}

// IsIgnoreFile reports whether path p names a .gitignore file, in any
// case: on a file system that ignores case, git opening .gitignore reads
// a file tracked as .GitIgnore.
func IsIgnoreFile(p string) bool {
	return strings.EqualFold(p[strings.LastIndexByte(p, '/')+1:], ".gitignore")
}

// IsAttributesFile reports whether path p names a .gitattributes file, in
// any case (see IsIgnoreFile).
func IsAttributesFile(p string) bool {
	return strings.EqualFold(p[strings.LastIndexByte(p, '/')+1:], ".gitattributes")
}

// BlobID returns the git object ID of the file at full as git would store
// it without filters: its content, or a symlink's target, hashed as a
// blob with SHA-1 or, for a hash of 64 hex digits, SHA-256. It runs no
// process, so no path crosses a process boundary.
func BlobID(full string, hexLen int) (string, error) {
	fi, err := os.Lstat(full)
	if err != nil {
		return "", err
	}
	hh := NewHash(hexLen / 2)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(full)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(hh, "blob %d\x00%s", len(t), t)
	case fi.Mode().IsRegular():
		// Streamed: the file can be of any size, and is hashed as it is
		// read, never held; a file that grows meanwhile is hashed at the
		// size it had (a caller comparing IDs then sees a difference).
		f, fi, err := regfile.Open(full)
		if err != nil {
			return "", err
		}
		defer f.Close()
		fmt.Fprintf(hh, "blob %d\x00", fi.Size())
		if _, err := io.CopyN(hh, f, fi.Size()); err != nil {
			return "", fmt.Errorf("%s changed while it was read", full)
		}
	default:
		return "", fmt.Errorf("%s is not a file", full)
	}
	return hex.EncodeToString(hh.Sum(nil)), nil
}

// PlainPath reports whether p is a path the copy may create: relative,
// slash-separated, with no empty, ".", ".." or .git element (in any case).
// git refuses such paths in an index; the copy does not rely on it.
func PlainPath(p string) bool {
	if p == "" {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." || strings.EqualFold(el, ".git") {
			return false
		}
	}
	return true
}

// NewHash returns the hash of a repository whose object IDs are hashLen
// bytes long: SHA-256 for 32, else SHA-1.
func NewHash(hashLen int) hash.Hash {
	if hashLen == sha256.Size {
		return sha256.New()
	}
	return sha1.New()
}
