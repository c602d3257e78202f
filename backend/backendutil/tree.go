package backendutil

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// TreeFile is one file of a flattened tree: its git mode (Regular,
// Executable or Symlink) and the hash of its blob, already stored.
type TreeFile struct {
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// WriteTree stores in st the nested git trees of files, a flattened tree
// keyed by slash path, and returns the root tree's hash: the same hash
// git computes for those files. Entries are ordered as git orders them (a
// directory's name compared as if it ended in "/"). A path that is both a
// file and a directory is an error.
func WriteTree(st storer.EncodedObjectStorer, files map[string]TreeFile) (plumbing.Hash, error) {
	type dir struct {
		files map[string]TreeFile
		dirs  map[string]*dir
	}
	newDir := func() *dir { return &dir{files: map[string]TreeFile{}, dirs: map[string]*dir{}} }
	root := newDir()
	for p, f := range files {
		d := root
		parts := strings.Split(p, "/")
		for _, c := range parts[:len(parts)-1] {
			if _, ok := d.files[c]; ok {
				return plumbing.ZeroHash, fmt.Errorf("%q is a file and a directory", p)
			}
			if d.dirs[c] == nil {
				d.dirs[c] = newDir()
			}
			d = d.dirs[c]
		}
		name := parts[len(parts)-1]
		if d.dirs[name] != nil {
			return plumbing.ZeroHash, fmt.Errorf("%q is a file and a directory", p)
		}
		d.files[name] = f
	}
	var write func(d *dir) (plumbing.Hash, error)
	write = func(d *dir) (plumbing.Hash, error) {
		var t object.Tree
		for name, f := range d.files {
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: f.Mode, Hash: f.Hash})
		}
		for name, sub := range d.dirs {
			h, err := write(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
		}
		key := func(e object.TreeEntry) string {
			if e.Mode == filemode.Dir {
				return e.Name + "/"
			}
			return e.Name
		}
		sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
		obj := st.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return st.SetEncodedObject(obj)
	}
	return write(root)
}
