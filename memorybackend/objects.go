package memorybackend

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
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

// store wraps a go-git repository over in-memory storage: checkpoints are
// real commits, trees and blobs.
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

// readTree flattens the tree of a commit into its files.
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
			p := joinPath(prefix, e.Name)
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
// a branch, a tag, or anything go-git's revision parser takes.
func (s store) resolve(op string, rev grove.Rev) (plumbing.Hash, error) {
	notFound := &grove.Error{Code: grove.NotFound, Op: "memorybackend: " + op, Rev: rev,
		Err: errors.New("does not resolve to a commit")}
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

// newIgnorer returns what the .gitignore files of a tree ignore, by git's
// rules (backendutil.Ignore).
func newIgnorer(nodes map[string]*node) *backendutil.Ignore {
	ig := &backendutil.Ignore{}
	for p, n := range nodes {
		if path.Base(p) == ".gitignore" && n.mode.IsRegular() {
			ig.AddGitignore(parentOf(p), n.data)
		}
	}
	return ig
}

// capture is what a checkpoint of a tree would hold.
type capture struct {
	files   map[string]entry
	data    map[string][]byte // content of files, for writing blobs
	skipped []grove.Skipped
}

// captureTree decides, for every node of a working tree, whether a
// checkpoint holds it: tracked files always; untracked files unless ignored
// (and not included) or new and over the size cap. Empty directories are
// listed as skipped.
func captureTree(ctx context.Context, nodes map[string]*node, tracked map[string]entry, opts *backend.CheckpointOptions) (capture, error) {
	limit := opts.MaxNewFileSize
	if limit == 0 {
		limit = grove.DefaultMaxNewFileSize
	}
	ig := newIgnorer(nodes)
	included := func(p string) bool {
		for _, inc := range opts.Include {
			if p == inc || strings.HasPrefix(p, inc+"/") {
				return true
			}
		}
		return false
	}
	c := capture{files: map[string]entry{}, data: map[string][]byte{}}
	nonEmpty := map[string]bool{}
	seen := 0
	for p, n := range nodes {
		if seen++; stopped(ctx, seen) {
			return capture{}, grove.ContextError(ctx, "memorybackend: capture")
		}
		if p != "." {
			nonEmpty[parentOf(p)] = true
		}
		if n.isDir() {
			continue
		}
		if _, ok := tracked[p]; !ok {
			if ig.Ignored(p, false) && !included(p) {
				continue
			}
			if n.mode.IsRegular() && limit > 0 && int64(len(n.data)) > limit {
				c.skipped = append(c.skipped, grove.Skipped{Path: p, Reason: grove.SkipTooLarge, Size: int64(len(n.data))})
				continue
			}
		}
		e := entry{mode: filemode.Regular}
		switch {
		case n.isSymlink():
			e.mode = filemode.Symlink
		case n.mode&0o111 != 0:
			e.mode = filemode.Executable
		}
		e.hash = plumbing.ComputeHash(plumbing.BlobObject, n.data)
		c.files[p] = e
		c.data[p] = n.data
	}
	for p, n := range nodes {
		if p != "." && n.isDir() && !nonEmpty[p] && !ig.Ignored(p, true) {
			c.skipped = append(c.skipped, grove.Skipped{Path: p, Reason: grove.SkipEmptyDirectory})
		}
	}
	slices.SortFunc(c.skipped, func(a, b grove.Skipped) int { return strings.Compare(a.Path, b.Path) })
	return c, nil
}

// stopped is a long loop's look at its context, every 256th of its steps
// (i counts them): whether ctx ended.
func stopped(ctx context.Context, i int) bool { return i%256 == 0 && ctx.Err() != nil }

// changes compares a capture with the tracked files of the current commit.
func changes(c capture, tracked map[string]entry) []grove.Change {
	var out []grove.Change
	for p, e := range c.files {
		t, ok := tracked[p]
		switch {
		case !ok:
			out = append(out, grove.Change{Path: p, Kind: grove.ChangeUntracked})
		case t != e:
			out = append(out, grove.Change{Path: p, Kind: grove.ChangeModified})
		}
	}
	for p := range tracked {
		if _, ok := c.files[p]; !ok {
			out = append(out, grove.Change{Path: p, Kind: grove.ChangeDeleted})
		}
	}
	slices.SortFunc(out, func(a, b grove.Change) int { return strings.Compare(a.Path, b.Path) })
	return out
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

// blobEqual reports whether a node holds exactly what entry e describes.
func blobEqual(n *node, e entry) bool {
	if n == nil || n.isDir() {
		return false
	}
	if (e.mode == filemode.Symlink) != n.isSymlink() {
		return false
	}
	if e.mode != filemode.Symlink && (e.mode == filemode.Executable) != (n.mode&0o111 != 0) {
		return false
	}
	return plumbing.ComputeHash(plumbing.BlobObject, n.data) == e.hash
}
