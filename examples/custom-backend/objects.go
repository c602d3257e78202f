package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendutil"
)

// entry is one file of a flattened tree.
type entry struct {
	mode filemode.FileMode // Regular, Executable or Symlink
	hash plumbing.Hash
}

// store is the workspace's go-git repository: checkpoints are its commits,
// branches and checkpoint refs are its refs. A store is opened for each
// operation, so no go-git state is shared between goroutines.
type store struct {
	repo *git.Repository
}

func (s store) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := s.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.repo.Storer.SetEncodedObject(obj)
}

func (s store) readBlob(h plumbing.Hash) ([]byte, error) {
	b, err := s.repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// writeTree stores the nested trees of a flattened file list and returns
// the root tree's hash.
func (s store) writeTree(files map[string]entry) (plumbing.Hash, error) {
	tree := make(map[string]backendutil.TreeFile, len(files))
	for p, e := range files {
		tree[p] = backendutil.TreeFile{Mode: e.mode, Hash: e.hash}
	}
	return backendutil.WriteTree(s.repo.Storer, tree)
}

// readTree flattens the tree of a commit into its files, and returns the
// tree's hash.
func (s store) readTree(ctx context.Context, commit plumbing.Hash) (map[string]entry, plumbing.Hash, error) {
	c, err := s.repo.CommitObject(commit)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	t, err := c.Tree()
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	out := map[string]entry{}
	var walk func(t *object.Tree, prefix string) error
	walk = func(t *object.Tree, prefix string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, e := range t.Entries {
			p := join(prefix, e.Name)
			if !validTreePath(p) {
				return fmt.Errorf("tree %s holds an invalid path %q", t.Hash, p)
			}
			if e.Mode == filemode.Dir {
				sub, err := s.repo.TreeObject(e.Hash)
				if err != nil {
					return err
				}
				if err := walk(sub, p); err != nil {
					return err
				}
				continue
			}
			out[p] = entry{mode: e.Mode, hash: e.Hash}
		}
		return nil
	}
	if err := walk(t, "."); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	return out, c.TreeHash, nil
}

// validTreePath refuses a tree path that could lead outside a directory it
// is written into, or into a .git, whoever wrote the tree.
func validTreePath(p string) bool {
	if !fs.ValidPath(p) || p == "." {
		return false
	}
	for c := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// backendutilTree reads the blobs of a flattened tree into a
// backendutil.Tree, for Diff.
func (s store) backendutilTree(files map[string]entry) (backendutil.Tree, error) {
	out := make(backendutil.Tree, len(files))
	for p, e := range files {
		data, err := s.readBlob(e.hash)
		if err != nil {
			return nil, err
		}
		out[p] = backendutil.File{Data: data, Mode: fileMode(e.mode)}
	}
	return out, nil
}

func (s store) writeCommit(tree, parent plumbing.Hash, opts *backend.CheckpointOptions, when time.Time) (plumbing.Hash, error) {
	author := opts.Author
	if author == (grove.Signature{}) {
		author = grove.DefaultAuthor
	}
	msg := opts.Message
	if msg == "" {
		msg = "grove checkpoint"
	}
	sig := object.Signature{Name: author.Name, Email: author.Email, When: when}
	c := object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	obj := s.repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.repo.Storer.SetEncodedObject(obj)
}

// resolve turns a revision into a commit hash: a full or abbreviated hash,
// a branch, a tag, or anything go-git's revision parser takes. A revision
// that names no commit is NotFound.
func (s store) resolve(op string, rev grove.Rev) (plumbing.Hash, error) {
	notFound := &grove.Error{Code: grove.NotFound, Op: prefix + op, Rev: rev, Err: errors.New("does not resolve to a commit")}
	if rev == "" || strings.HasPrefix(string(rev), "-") {
		return plumbing.ZeroHash, notFound
	}
	h, err := s.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return plumbing.ZeroHash, notFound
	}
	if _, err := s.repo.CommitObject(*h); err != nil {
		return plumbing.ZeroHash, notFound
	}
	return *h, nil
}

func (s store) checkpointOf(h plumbing.Hash) (grove.Checkpoint, error) {
	c, err := s.repo.CommitObject(h)
	if err != nil {
		return grove.Checkpoint{}, err
	}
	cp := grove.Checkpoint{
		ID:      grove.CheckpointID(h.String()),
		Message: c.Message,
		Author:  grove.Signature{Name: c.Author.Name, Email: c.Author.Email},
		Time:    c.Author.When,
	}
	if len(c.ParentHashes) > 0 {
		cp.Parent = grove.CheckpointID(c.ParentHashes[0].String())
	}
	return cp, nil
}

// ref returns the commit a ref points at; ok is false if there is no such
// ref.
func (s store) ref(name plumbing.ReferenceName) (h plumbing.Hash, ok bool, err error) {
	r, err := s.repo.Storer.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	return r.Hash(), true, nil
}

func (s store) setRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	return s.repo.Storer.SetReference(plumbing.NewHashReference(name, h))
}

// fileMode is the mode a file of a tree entry gets in a working tree.
func fileMode(m filemode.FileMode) fs.FileMode {
	switch m {
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case filemode.Executable:
		return 0o755
	}
	return 0o644
}

func join(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}
