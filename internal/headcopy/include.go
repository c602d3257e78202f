package headcopy

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
)

// IncludeFile, at the top of the repository's main working tree, names
// (in gitignore syntax) the ignored files and directories every new head
// gets a copy of: an .env, local settings, a dependency directory.
const IncludeFile = ".worktreeinclude"

// Includes reads the .worktreeinclude of the main working tree main: the
// patterns, or nil when there is none (or main is "": a bare repository
// has none). The caller reads it from the user's checkout, never from a
// head, so an agent cannot name what is copied; it must be a regular file
// of at most maxIncludeFile bytes.
func Includes(main string) (gitignore.Matcher, error) {
	if main == "" {
		return nil, nil
	}
	root, err := os.OpenRoot(main)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Lstat(IncludeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxIncludeFile {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", IncludeFile, maxIncludeFile)
	}
	data, err := root.ReadFile(IncludeFile)
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

// maxIncludeFile bounds the .worktreeinclude read.
const maxIncludeFile = 1 << 20

// Copier copies paths from one tree to another, through os.Root on both
// (nothing is followed out of either): a file is cloned where the file
// system can (FICLONE), else copied; a symlink is copied as a symlink; a
// path the destination has is left alone; irregular files are skipped.
type Copier struct {
	ctx      context.Context
	src, dst *os.Root
}

// NewCopier returns a Copier from src to dst that stops when ctx ends.
func NewCopier(ctx context.Context, src, dst *os.Root) *Copier {
	return &Copier{ctx: ctx, src: src, dst: dst}
}

// Walk adds to todo what m matches under the directory p (which it does
// not match itself), and returns it.
func (c *Copier) Walk(p string, m gitignore.Matcher, todo []string) []string {
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

// Copy copies p (a file, a symlink or a whole directory) unless the
// destination has it; irregular files are skipped.
func (c *Copier) Copy(p string) error {
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
			if err := c.Copy(p + "/" + e.Name()); err != nil {
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
func (c *Copier) copyFile(p string, perm fs.FileMode) error {
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
	if !CloneFile(out, in) {
		_, err = io.Copy(out, in)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &grove.Error{Code: grove.Internal, Op: "copy " + IncludeFile, Path: p, Err: err}
	}
	return nil
}
