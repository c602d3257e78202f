package gitbackend

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/regfile"
)

// Reading without a process. What an operation needs to know before it
// runs git — a head's commit and tree, its newest checkpoint, a commit's
// metadata — is read here through go-git and the ref files, with no git
// process. Each reader answers ok=false for anything it does not handle
// exactly as git would (a SHA-256 repository, a symbolic or unusual ref
// name, an object it cannot find or parse, a commit in another encoding),
// and its caller then asks git, as before: the fast path is an
// optimization, never a second opinion.
//
// One object is written here too: a checkpoint's commit (writeCommit), as
// git commit-tree would write it, byte for byte. Objects are content
// addressed and change nothing by being written; refs, indexes and
// working trees are still changed by git only.

// maxCommitSize bounds the commit objects read in-process: a larger one
// (nothing git writes for grove) is left to git.
const maxCommitSize = 1 << 20

// objectStore is the repository's object database, opened once and
// shared, with its pack indexes cached until an object is not found.
type objectStore struct {
	mu sync.Mutex
	st *filesystem.Storage
}

func (rp *repo) store() *objectStore {
	rp.objOnce.Do(func() {
		rp.objs = &objectStore{st: filesystem.NewStorageWithOptions(osfs.New(rp.common), cache.NewObjectLRUDefault(),
			filesystem.Options{LargeObjectThreshold: maxCommitSize})}
	})
	return rp.objs
}

// isHex reports whether s is a full SHA-1 object ID in lower-case hex.
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

// readCommit reads the commit id in-process.
func (rp *repo) readCommit(id string) (*object.Commit, bool) {
	if !isSHA1(id) {
		return nil, false
	}
	s := rp.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	h := plumbing.NewHash(id)
	obj, err := s.st.EncodedObject(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// Packed since the indexes were read (git gc, git repack).
		s.st.Reindex()
		obj, err = s.st.EncodedObject(plumbing.AnyObject, h)
	}
	if err != nil || obj.Type() != plumbing.CommitObject || obj.Size() > maxCommitSize {
		return nil, false
	}
	c, err := object.DecodeCommit(s.st, obj)
	if err != nil || c.Encoding != "" && !strings.EqualFold(string(c.Encoding), "UTF-8") || len(c.ParentHashes) > 0 && c.ParentHashes[0].IsZero() {
		return nil, false
	}
	return c, true
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
func checkpointOf(c *object.Commit) backend.Checkpoint {
	cp := backend.Checkpoint{
		ID:      backend.CheckpointID(c.Hash.String()),
		Author:  backend.Signature{Name: c.Author.Name, Email: c.Author.Email},
		Time:    time.Unix(c.Author.When.Unix(), 0),
		Message: strings.TrimRight(c.Message, "\n"),
	}
	if len(c.ParentHashes) > 0 {
		cp.Parent = backend.CheckpointID(c.ParentHashes[0].String())
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
	data, err := regfile.Read(filepath.Join(rp.common, filepath.FromSlash(name)), 4096)
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
		data, err := regfile.Read(path, 1<<30)
		if err != nil || !sigOf(path).same(sig) {
			return nil, false
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
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
func (rp *repo) lastCheckpoint(id backend.HeadID) ([]checkpointRef, bool) {
	prefix := refPrefix(id)
	if !plainRefName(prefix + "0") {
		return nil, false
	}
	// Loose refs first, then packed-refs: git pack-refs writes packed-refs
	// before it deletes the loose files, so a ref moving between the two
	// is seen in at least one.
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
	if s == "" || strings.ContainsAny(s, "<>") || isCrud(s[0]) || isCrud(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
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
// a message with a NUL, a SHA-256 repository.
func (rp *repo) writeCommit(tree, parent string, author, committer backend.Signature, when time.Time, msg string) (string, bool) {
	if !isSHA1(tree) || !isSHA1(parent) || strings.IndexByte(msg, 0) >= 0 ||
		!plainIdent(author.Name) || !plainIdent(author.Email) || !plainIdent(committer.Name) || !plainIdent(committer.Email) {
		return "", false
	}
	at := time.Unix(when.Unix(), 0).UTC()
	c := &object.Commit{
		Author:       object.Signature{Name: author.Name, Email: author.Email, When: at},
		Committer:    object.Signature{Name: committer.Name, Email: committer.Email, When: at},
		Message:      msg,
		TreeHash:     plumbing.NewHash(tree),
		ParentHashes: []plumbing.Hash{plumbing.NewHash(parent)},
	}
	s := rp.store()
	s.mu.Lock()
	defer s.mu.Unlock()
	obj := s.st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return "", false
	}
	id, err := s.st.SetEncodedObject(obj)
	if err != nil {
		return "", false
	}
	return id.String(), true
}
