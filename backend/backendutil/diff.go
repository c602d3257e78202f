package backendutil

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/groveworks/grove"
)

// File is one file of a Tree: its content, or a symlink's target.
type File struct {
	Data []byte
	// Mode is fs.ModeSymlink for a symlink; otherwise the file is a regular
	// file, executable when any of the 0o111 bits is set. Git keeps nothing
	// else of a mode, and neither does Diff.
	Mode fs.FileMode
}

// Tree is a tree of files by path: slash-separated, relative to the
// tree's root, valid under fs.ValidPath, and never "." itself. Directories
// are implied by the paths of their files, so a tree has no empty
// directory, as a Git tree has none.
type Tree map[string]File

// Diff returns the difference from tree from to tree to as git diff
// --no-renames prints it: Patch is a unified patch whose file headers name
// the paths under a/ and b/, with "new file mode", "deleted file mode", and
// "old mode 100644" / "new mode 100755" for a change of the executable bit
// (with no hunk when the content is the same), and "Binary files ...
// differ" for a binary file; Files has one FileStat per changed path,
// sorted by path, with the lines added and deleted (both zero for a
// mode-only change or a binary file). Equal trees give the zero Diff.
//
// A path that is not valid, or that is both a file and a directory of the
// same tree, is InvalidArgument. Once ctx ends, Diff returns a Canceled
// *grove.Error for which errors.Is(err, ctx.Err()) holds. Other errors
// are Internal.
func Diff(ctx context.Context, from, to Tree) (grove.Diff, error) {
	const op = "backendutil: diff"
	if err := grove.ContextError(ctx, op); err != nil {
		return grove.Diff{}, err
	}
	st := memory.NewStorage()
	a, err := storeTree(st, from)
	if err != nil {
		return grove.Diff{}, grove.Errorf(grove.InvalidArgument, op, "from: %w", err)
	}
	b, err := storeTree(st, to)
	if err != nil {
		return grove.Diff{}, grove.Errorf(grove.InvalidArgument, op, "to: %w", err)
	}
	// go-git answers a context that ended with its own ErrCanceled: answer
	// the context's error instead.
	changes, err := object.DiffTreeWithOptions(ctx, a, b, nil)
	if err != nil {
		if cerr := grove.ContextError(ctx, op); cerr != nil {
			return grove.Diff{}, cerr
		}
		return grove.Diff{}, grove.Errorf(grove.Internal, op, "%w", err)
	}
	patch, err := changes.PatchContext(ctx)
	if err != nil {
		if cerr := grove.ContextError(ctx, op); cerr != nil {
			return grove.Diff{}, cerr
		}
		return grove.Diff{}, grove.Errorf(grove.Internal, op, "%w", err)
	}
	var d grove.Diff
	for _, fp := range patch.FilePatches() {
		d.Files = append(d.Files, statOf(fp))
	}
	if len(d.Files) == 0 {
		return grove.Diff{}, nil
	}
	slices.SortFunc(d.Files, func(x, y grove.FileStat) int { return strings.Compare(x.Path, y.Path) })
	d.Patch = patch.String()
	return d, nil
}

// statOf counts the lines a file patch adds and deletes, as git diff
// --numstat does; unlike go-git's Patch.Stats, a patch without hunks (a
// mode-only change, a binary file) is counted too, with zero lines.
func statOf(fp fdiff.FilePatch) grove.FileStat {
	from, to := fp.Files()
	var s grove.FileStat
	if to != nil {
		s.Path = to.Path()
	} else {
		s.Path = from.Path()
	}
	for _, c := range fp.Chunks() {
		text := c.Content()
		if text == "" {
			continue
		}
		n := strings.Count(text, "\n")
		if !strings.HasSuffix(text, "\n") {
			n++
		}
		switch c.Type() {
		case fdiff.Add:
			s.Added += n
		case fdiff.Delete:
			s.Deleted += n
		}
	}
	return s
}

// storeTree writes the blobs and trees of t into st and returns its root
// tree.
func storeTree(st storer.EncodedObjectStorer, t Tree) (*object.Tree, error) {
	files := make(map[string]TreeFile, len(t))
	for _, p := range sortedPaths(t) {
		if !fs.ValidPath(p) || p == "." {
			return nil, fmt.Errorf("invalid path %q", p)
		}
		f := t[p]
		mode := filemode.Regular
		switch {
		case f.Mode&fs.ModeSymlink != 0:
			mode = filemode.Symlink
		case f.Mode&0o111 != 0:
			mode = filemode.Executable
		}
		h, err := storeObject(st, plumbing.BlobObject, f.Data)
		if err != nil {
			return nil, err
		}
		files[p] = TreeFile{Mode: mode, Hash: h}
	}
	h, err := WriteTree(st, files)
	if err != nil {
		return nil, err
	}
	return object.GetTree(st, h)
}

func storeObject(st storer.EncodedObjectStorer, t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	obj.SetType(t)
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
	return st.SetEncodedObject(obj)
}

func sortedPaths(t Tree) []string {
	ps := make([]string, 0, len(t))
	for p := range t {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
