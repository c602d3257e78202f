package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendutil"
)

// tempPrefix starts the names of the temporary files of atomic writes. A
// scan never captures them, and a restore never removes them.
const tempPrefix = ".dirbackend-tmp-"

// visit is one entry a scan saw.
type visit struct {
	mode    fs.FileMode // its type, from Lstat
	ignored bool        // untracked and ignored; an ignored directory is not entered
}

// scan is what a checkpoint of a head's directory now would hold, and what
// a restore must know of the directory.
type scan struct {
	ig      backendutil.Ignore
	files   map[string]entry // what a checkpoint holds
	seen    map[string]visit // every entry visited, by path
	skipped []grove.Skipped
}

// scanHead walks the head's directory: tracked files (those of the tree
// tracked) are always captured; untracked files unless ignored (and not in
// opts.Include) or regular and over opts.MaxNewFileSize. Symlinks are
// captured as links, never followed. Empty directories and irregular files
// are listed as skipped. Entries named .git (in any case), at any depth,
// are treated as ignored: a Git tree cannot hold them. blob, if not nil, is called with
// the content of every captured file.
func scanHead(ctx context.Context, root *os.Root, tracked map[string]entry, opts *backend.CheckpointOptions,
	blob func(p string, e entry, data []byte) error) (*scan, error) {
	limit := opts.MaxNewFileSize
	if limit == 0 {
		limit = grove.DefaultMaxNewFileSize
	}
	trackedDirs := map[string]bool{}
	for p := range tracked {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			trackedDirs[d] = true
		}
	}
	included := func(p string) bool {
		return slices.ContainsFunc(opts.Include, func(inc string) bool { return p == inc || strings.HasPrefix(p, inc+"/") })
	}
	// A directory is entered, even if ignored, when something under it is
	// tracked or included.
	enter := func(p string) bool {
		return trackedDirs[p] || included(p) ||
			slices.ContainsFunc(opts.Include, func(inc string) bool { return strings.HasPrefix(inc, p+"/") })
	}
	s := &scan{files: map[string]entry{}, seen: map[string]visit{}}
	hasChild := map[string]bool{}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." {
			hasChild[path.Dir(p)] = true
		}
		typ := d.Type()
		_, isTracked := tracked[p]
		if strings.EqualFold(d.Name(), ".git") || strings.HasPrefix(d.Name(), tempPrefix) {
			s.seen[p] = visit{mode: typ, ignored: true}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if p != "." && s.ig.Ignored(p, true) && !enter(p) {
				s.seen[p] = visit{mode: typ, ignored: true}
				return fs.SkipDir
			}
			s.seen[p] = visit{mode: typ}
			data, err := root.ReadFile(join(p, ".gitignore"))
			switch {
			case err == nil:
				s.ig.AddGitignore(p, data)
			case !errors.Is(err, fs.ErrNotExist):
				return err
			}
			return nil
		}
		if !isTracked && s.ig.Ignored(p, false) && !included(p) {
			s.seen[p] = visit{mode: typ, ignored: true}
			return nil
		}
		s.seen[p] = visit{mode: typ}
		var data []byte
		mode := filemode.Regular
		switch {
		case typ&fs.ModeSymlink != 0 && capabilities.Symlinks:
			target, err := root.Readlink(p)
			if err != nil {
				return err
			}
			data, mode = []byte(target), filemode.Symlink
		case typ.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if !isTracked && limit > 0 && info.Size() > limit {
				s.skipped = append(s.skipped, grove.Skipped{Path: p, Reason: grove.SkipTooLarge, Size: info.Size()})
				return nil
			}
			if info.Mode()&0o111 != 0 && capabilities.FileModes {
				mode = filemode.Executable
			}
			if data, err = root.ReadFile(p); err != nil {
				return err
			}
		default:
			s.skipped = append(s.skipped, grove.Skipped{Path: p, Reason: grove.SkipIrregular})
			return nil
		}
		e := entry{mode: mode, hash: plumbing.ComputeHash(plumbing.BlobObject, data)}
		s.files[p] = e
		if blob != nil {
			return blob(p, e, data)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p, v := range s.seen {
		if p != "." && v.mode.IsDir() && !v.ignored && !hasChild[p] {
			s.skipped = append(s.skipped, grove.Skipped{Path: p, Reason: grove.SkipEmptyDirectory})
		}
	}
	slices.SortFunc(s.skipped, func(a, b grove.Skipped) int { return strings.Compare(a.Path, b.Path) })
	return s, nil
}

// changes compares what a scan captured with the tracked files of the
// head's commit.
func (s *scan) changes(tracked map[string]entry) []grove.Change {
	var out []grove.Change
	for p, e := range s.files {
		t, ok := tracked[p]
		switch {
		case !ok:
			out = append(out, grove.Change{Path: p, Kind: grove.ChangeUntracked})
		case t != e:
			out = append(out, grove.Change{Path: p, Kind: grove.ChangeModified})
		}
	}
	for p := range tracked {
		if _, ok := s.files[p]; !ok {
			out = append(out, grove.Change{Path: p, Kind: grove.ChangeDeleted})
		}
	}
	slices.SortFunc(out, func(a, b grove.Change) int { return strings.Compare(a.Path, b.Path) })
	return out
}
