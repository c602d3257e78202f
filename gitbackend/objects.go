package gitbackend

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/regfile"
)

// Reading without a process. What an operation needs to know before it
// runs git — a head's commit and tree, its newest checkpoint, a commit's
// metadata — is read here from the ref files and the loose object files,
// with no git process. Each reader answers ok=false for anything it does
// not handle exactly as git would (a SHA-256 repository, a reftable
// repository, a symbolic, symlinked or unusual ref, a packed or
// unreadable object, a commit in another encoding or of a shape git does
// not write), and its caller then asks git, as before: the fast path is
// an optimization, never a second opinion.
//
// Everything here is hostile input (an agent can write the common git
// dir): files are read only if they are regular files, without blocking
// (a FIFO would hang grove) and up to a bound; objects are read only from
// loose files, which are verified against their names, never through
// alternates or packs (a crafted pack or alternates file could make a
// reader recurse without end).
//
// One object is written here too: a checkpoint's commit (writeCommit), as
// git commit-tree would write it, byte for byte. Objects are content
// addressed and change nothing by being written; refs, indexes and
// working trees are still changed by git only.

// maxCommitSize bounds the commit objects read in-process: a larger one
// (nothing git writes for grove) is left to git.
const maxCommitSize = 1 << 20

// maxPackedRefs bounds the packed-refs file read in-process; a larger one
// is left to git.
const maxPackedRefs = 64 << 20

// isSHA1 reports whether s is a full SHA-1 object ID in lower-case hex.
func isSHA1(s string) bool {
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

// looseObject returns the type and content of the loose object id,
// verified against its name; ok is false if there is no such loose
// object (it may be packed), or it does not read as one.
func (rp *repo) looseObject(id string, max int) (typ string, body []byte, ok bool) {
	if !isSHA1(id) {
		return "", nil, false
	}
	data, err := regfile.Read(filepath.Join(rp.common, "objects", id[:2], id[2:]), int64(max)+1024)
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

// readCommit reads the commit id in-process, from its loose object.
func (rp *repo) readCommit(id string) (*object.Commit, bool) {
	if _, err := os.Lstat(filepath.Join(rp.common, "shallow")); !errors.Is(err, fs.ErrNotExist) {
		return nil, false // a shallow repository: git hides some parents
	}
	if c, ok := rp.commits.get(id); ok {
		return c, true
	}
	typ, body, ok := rp.looseObject(id, maxCommitSize)
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
	rp.commits.put(id, c)
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
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "tree ") || !isSHA1(lines[0][5:]) {
		return false
	}
	i := 1
	for ; i < len(lines) && strings.HasPrefix(lines[i], "parent "); i++ {
		if !isSHA1(lines[i][7:]) {
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

// commitTree returns the tree of commit id.
func (rp *repo) commitTree(id string) (string, bool) {
	c, ok := rp.readCommit(id)
	if !ok {
		return "", false
	}
	return c.TreeHash.String(), true
}

// checkpointOf is commit c as a checkpoint, as parseCheckpoint reads it
// from git log.
func checkpointOf(c *object.Commit) grove.Checkpoint {
	cp := grove.Checkpoint{
		ID:      grove.CheckpointID(c.Hash.String()),
		Author:  grove.Signature{Name: c.Author.Name, Email: c.Author.Email},
		Time:    time.Unix(c.Author.When.Unix(), 0),
		Message: strings.TrimRight(c.Message, "\n"),
	}
	if len(c.ParentHashes) > 0 {
		cp.Parent = grove.CheckpointID(c.ParentHashes[0].String())
	}
	return cp
}

// readRef returns the object ID a branch or grove ref points at, read from
// its loose file or, failing that, packed-refs, as git reads it; ok is
// false for a symbolic ref, a name outside refs/heads/ and refs/grove/ or
// with a component git would refuse, or anything unreadable.
func (rp *repo) readRef(name string) (string, bool) {
	if !plainRefName(name) {
		return "", false
	}
	if !rp.filesRefs() {
		return "", false
	}
	path := filepath.Join(rp.common, filepath.FromSlash(name))
	// A symlink among the loose refs is a symbolic ref to git: git
	// answers.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return "", false
	}
	data, err := regfile.Read(path, 4096)
	switch {
	case err == nil:
		v := strings.TrimRight(string(data), "\n")
		return v, isSHA1(v)
	case !errors.Is(err, os.ErrNotExist):
		return "", false
	}
	p, ok := rp.packedRefs()
	if !ok {
		return "", false
	}
	v, found := p.refs[name]
	return v, found
}

// branchCommit resolves rev as git rev-parse resolves it to a commit when
// rev is a full branch or grove ref name, or the short name of a branch
// that git's earlier rules do not take (no <rev> in the git dir, no
// refs/<rev>, no refs/tags/<rev>, loose or packed); ok is false when git
// must answer (any other revision, a ref that is not plain, a commit that
// is not a loose one of the shape git writes).
func (rp *repo) branchCommit(rev string) (string, bool) {
	ref := rev
	if !plainRefName(ref) {
		ref = "refs/heads/" + rev
		if !plainRefName(ref) || !rp.filesRefs() {
			return "", false
		}
		p, ok := rp.packedRefs()
		if !ok {
			return "", false
		}
		for _, earlier := range []string{rev, "refs/" + rev, "refs/tags/" + rev} {
			if _, found := p.refs[earlier]; found {
				return "", false
			}
			if _, err := os.Lstat(filepath.Join(rp.common, filepath.FromSlash(earlier))); !errors.Is(err, fs.ErrNotExist) {
				return "", false
			}
		}
	}
	id, ok := rp.readRef(ref)
	if !ok {
		return "", false
	}
	if _, ok := rp.readCommit(id); !ok {
		return "", false
	}
	return id, true
}

// plainRefName reports whether name is a branch or grove ref whose every
// component is one git accepts and that names the same file on every
// system: letters, digits and "-_.+/", no empty, dot-led or ".lock"
// component, no "..".
func plainRefName(name string) bool {
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

// packed is a parse of packed-refs: every ref it names, and for each head
// the greatest name under its checkpoint prefix.
type packed struct {
	sig  fileSig
	refs map[string]string
	last map[string]string // head ID → greatest ref name in refs/grove/<id>/
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

// packedRefs returns packed-refs as it is now, parsed once per version of
// the file. git replaces the file by rename, so a new version has a new
// inode.
func (rp *repo) packedRefs() (*packed, bool) {
	path := filepath.Join(rp.common, "packed-refs")
	sig := sigOf(path)
	rp.packedMu.Lock()
	defer rp.packedMu.Unlock()
	if rp.packed != nil && rp.packed.sig.same(sig) {
		return rp.packed, true
	}
	p := &packed{sig: sig, refs: map[string]string{}, last: map[string]string{}}
	if sig.exists() {
		if sig.fi.Size() > maxPackedRefs {
			return nil, false
		}
		data, err := regfile.Read(path, maxPackedRefs)
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
			if !ok || !isSHA1(id) {
				return nil, false
			}
			p.refs[name] = id
			if rest, ok := strings.CutPrefix(name, "refs/grove/"); ok {
				if head, _, ok := strings.Cut(rest, "/"); ok && name > p.last[head] {
					p.last[head] = name
				}
			}
		}
	}
	rp.packed = p
	return p, true
}

// lastCheckpoint is checkpoints(ctx, id, 1) without a process: the
// greatest ref name under the head's prefix, loose or packed, and its
// commit. ok is false when git must answer instead: a name that is not a
// sequence number, a directory among the refs, a ref or commit that does
// not read.
func (rp *repo) lastCheckpoint(id grove.HeadID) ([]checkpointRef, bool) {
	prefix := refPrefix(id)
	if !plainRefName(prefix+"0") || !rp.filesRefs() {
		return nil, false
	}
	// Loose refs first, then packed-refs: git pack-refs writes packed-refs
	// before it deletes the loose files, so a ref moving between the two
	// is seen in at least one.
	// Only real directories: git takes a symlink among the refs for a
	// symbolic ref, never for a directory of refs.
	for _, d := range []string{"refs/grove", prefix} {
		if fi, err := os.Lstat(filepath.Join(rp.common, filepath.FromSlash(d))); err == nil && !fi.IsDir() {
			return nil, false
		}
	}
	ents, err := os.ReadDir(filepath.Join(rp.common, filepath.FromSlash(prefix)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	best := ""
	for _, e := range ents {
		if !e.Type().IsRegular() {
			return nil, false
		}
		if name := prefix + e.Name(); name > best {
			best = name
		}
	}
	p, ok := rp.packedRefs()
	if !ok {
		return nil, false
	}
	if name := p.last[string(id)]; name > best {
		best = name
	}
	if best == "" {
		return []checkpointRef{}, true
	}
	seq, err := strconv.Atoi(strings.TrimPrefix(best, prefix))
	if err != nil || seq < 0 {
		return nil, false
	}
	commit, ok := rp.readRef(best)
	if !ok {
		return nil, false
	}
	c, ok := rp.readCommit(commit)
	if !ok {
		return nil, false
	}
	return []checkpointRef{{ref: best, seq: seq, Checkpoint: checkpointOf(c)}}, true
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

// writeCommit writes, as a loose object, the commit git commit-tree would
// write for tree, parent, the author and committer at when (whole
// seconds, UTC) and msg, and returns its ID. ok is false, with nothing
// written, when git must write it instead: an identity git would rewrite,
// a message with a NUL or that git would re-encode (not UTF-8, or a
// noncharacter), a SHA-256 repository, an object directory that is not
// there yet or cannot be written. (The runner fixes i18n.commitEncoding
// to UTF-8, so git writes no encoding header either.)
func (rp *repo) writeCommit(tree, parent string, author, committer grove.Signature, when time.Time, msg string) (string, bool) {
	if !isSHA1(tree) || !isSHA1(parent) || strings.IndexByte(msg, 0) >= 0 || !gitUTF8(msg) ||
		!plainIdent(author.Name) || !plainIdent(author.Email) || !plainIdent(committer.Name) || !plainIdent(committer.Email) {
		return "", false
	}
	at := strconv.FormatInt(when.Unix(), 10) + " +0000"
	body := fmt.Sprintf("tree %s\nparent %s\nauthor %s <%s> %s\ncommitter %s <%s> %s\n\n%s",
		tree, parent, author.Name, author.Email, at, committer.Name, committer.Email, at, msg)
	raw := append(fmt.Appendf(nil, "commit %d\x00", len(body)), body...)
	sum := sha1.Sum(raw)
	id := hex.EncodeToString(sum[:])
	if err := rp.writeLoose(id, raw); err != nil {
		return "", false
	}
	return id, true
}

// writeLoose stores raw (an object's header and content) as the loose
// object id, as git does: compressed into a temporary file beside it (its
// mode 0444 less the umask), then renamed into place, so that a reader
// sees the whole object or none. A valid object already there is kept;
// anything else there is replaced. A missing fan-out directory is made
// as git makes it, except in a shared repository (left to git). All of
// it goes through os.Root on the object directory, so no link leads it
// elsewhere.
func (rp *repo) writeLoose(id string, raw []byte) error {
	objects := filepath.Join(rp.common, "objects")
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
	if typ, _, ok := rp.looseObject(id, len(raw)); ok && typ == "commit" {
		return nil
	}
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s/tmp_obj_%d_%d", dir, os.Getpid(), tmpSeq.Add(1))
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

// tmpSeq names temporary object files apart within the process.
var tmpSeq atomic.Uint64

// filesRefs reports whether the repository keeps its refs as files (loose
// and packed-refs), the only format read in-process; a reftable
// repository is left to git.
func (rp *repo) filesRefs() bool {
	rp.refsOnce.Do(func() {
		_, err := os.Lstat(filepath.Join(rp.common, "reftable"))
		fi, herr := os.Lstat(filepath.Join(rp.common, "refs", "heads"))
		rp.fileRefs = errors.Is(err, fs.ErrNotExist) && herr == nil && fi.IsDir()
	})
	return rp.fileRefs
}
