package gitbackend

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/registry"
)

// includeFile, at the top of the repository's main working tree, names
// (in gitignore syntax) the ignored files and directories every new head
// gets a copy of: an .env, local settings, a dependency directory.
const includeFile = ".worktreeinclude"

// includes reads the main working tree's .worktreeinclude: the patterns,
// or nil when there is none (a bare repository has none). It is read from
// the user's checkout, never from a head, so an agent cannot name what is
// copied; it must be a regular file of at most maxSmallFile bytes.
func (w *workspace) includes() (gitignore.Matcher, error) {
	if w.repo.main == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(w.repo.main)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Lstat(includeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > registry.MaxSmallFile {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", includeFile, registry.MaxSmallFile)
	}
	data, err := root.ReadFile(includeFile)
	if err != nil {
		return nil, err
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	if len(ps) == 0 {
		return nil, nil
	}
	return gitignore.NewMatcher(ps), nil
}

// copyIncludes copies into the new head mf the files of the main working
// tree that .worktreeinclude names and the main working tree's own
// .gitignore files ignore (never info/exclude or an excludes file named in
// configuration, which an agent can write): the candidates are what git
// ls-files lists as ignored (a wholly ignored directory as one entry,
// walked only when it does not match as a whole), and of them
// only what the new head ignores too (git check-ignore in the head) is
// copied, so that no checkpoint captures a copy. Files are cloned where
// the file system can (FICLONE), else copied; a path the head already has
// is left alone. Nothing is followed out of either tree: both are reached
// through os.Root, and symlinks are copied as symlinks.
func (w *workspace) copyIncludes(ctx context.Context, mf *registry.Manifest) error {
	m, err := w.includes()
	if err != nil || m == nil {
		return err
	}
	out, err := w.repo.run(ctx, gitcmd.Cmd{
		GitDir: w.repo.common, CommonDir: w.repo.common, WorkTree: w.repo.main, Dir: w.repo.main,
		Args: []string{"-c", "core.untrackedCache=false", "ls-files", "-z", "--others", "--ignored", "--exclude-per-directory=.gitignore", "--directory", "--no-empty-directory"},
	})
	if err != nil {
		return err
	}
	src, err := os.OpenRoot(w.repo.main)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenRoot(mf.Dir)
	if err != nil {
		return err
	}
	defer dst.Close()
	c := &copier{ctx: ctx, src: src, dst: dst}
	var todo []string
	for _, p := range strings.Split(out, "\x00") {
		if p == "" {
			continue
		}
		isDir := strings.HasSuffix(p, "/")
		p = strings.TrimSuffix(p, "/")
		if p == ".git" || strings.HasPrefix(p, ".git/") {
			continue
		}
		if m.Match(strings.Split(p, "/"), isDir) {
			if isDir {
				p += "/" // so that check-ignore matches it as a directory
			}
			todo = append(todo, p)
		} else if isDir {
			todo = c.walk(p, m, todo)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	// Only what the new head ignores too is copied: a copy its own rules
	// do not ignore (a head made from a revision whose .gitignore is
	// older) would be captured by its next checkpoint.
	ignored, err := w.repo.run(ctx, gitcmd.Cmd{
		GitDir: mf.Admin, CommonDir: w.repo.common, WorkTree: mf.Dir, Dir: mf.Dir,
		Args:  []string{"check-ignore", "-z", "--stdin"},
		Stdin: strings.NewReader(strings.Join(todo, "\x00") + "\x00"),
	})
	if err != nil && gitcmd.ExitCode(err) != 1 { // 1: none is ignored
		return err
	}
	for _, p := range strings.Split(ignored, "\x00") {
		if p = strings.TrimSuffix(p, "/"); p == "" {
			continue
		}
		if err := c.copy(p); err != nil {
			return err
		}
	}
	return nil
}

// copier copies paths from one tree to another.
type copier struct {
	ctx      context.Context
	src, dst *os.Root
}

// walk adds to todo what m matches under the directory p (which it does
// not match itself), and returns it.
func (c *copier) walk(p string, m gitignore.Matcher, todo []string) []string {
	_ = fs.WalkDir(c.src.FS(), p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: nothing to copy
		}
		if q == p {
			return nil
		}
		if d.Name() == ".git" {
			return fs.SkipDir
		}
		if m.Match(strings.Split(q, "/"), d.IsDir()) {
			if d.IsDir() {
				todo = append(todo, q+"/")
				return fs.SkipDir
			}
			todo = append(todo, q)
		}
		return c.ctx.Err()
	})
	return todo
}

// copy copies p (a file, a symlink or a whole directory) unless the
// destination has it; irregular files are skipped.
func (c *copier) copy(p string) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if _, err := c.dst.Lstat(p); err == nil {
		return nil
	}
	fi, err := c.src.Lstat(p)
	if err != nil {
		return nil
	}
	if dir := path.Dir(p); dir != "." {
		if err := c.dst.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch {
	case fi.IsDir():
		if err := c.dst.Mkdir(p, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		ents, err := fs.ReadDir(c.src.FS(), p)
		if err != nil {
			return nil
		}
		for _, e := range ents {
			if e.Name() == ".git" {
				continue
			}
			if err := c.copy(p + "/" + e.Name()); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := c.src.Readlink(p)
		if err != nil {
			return nil
		}
		return c.dst.Symlink(target, p)
	case fi.Mode().IsRegular():
		return c.copyFile(p, fi.Mode().Perm())
	}
	return nil
}

// copyFile clones or copies the regular file p.
func (c *copier) copyFile(p string, perm fs.FileMode) error {
	in, err := c.src.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil // replaced meanwhile
	}
	out, err := c.dst.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if !headcopy.CloneFile(out, in) {
		_, err = io.Copy(out, in)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: copy " + includeFile, Path: p, Err: err}
	}
	return nil
}
