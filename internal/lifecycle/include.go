package lifecycle

import (
	"context"
	"os"
	"strings"

	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitrepo"
	"github.com/groveworks/grove/internal/headcopy"
	"github.com/groveworks/grove/internal/registry"
)

// CopyIncludes copies into the new head mf the files of the main working
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
func CopyIncludes(ctx context.Context, rp *gitrepo.Repo, mf *registry.Manifest) error {
	m, err := headcopy.Includes(rp.Main)
	if err != nil || m == nil {
		return err
	}
	out, err := rp.Run(ctx, gitcmd.Cmd{
		GitDir: rp.Common, CommonDir: rp.Common, WorkTree: rp.Main, Dir: rp.Main,
		Args: []string{"-c", "core.untrackedCache=false", "ls-files", "-z", "--others", "--ignored", "--exclude-per-directory=.gitignore", "--directory", "--no-empty-directory"},
	})
	if err != nil {
		return err
	}
	src, err := os.OpenRoot(rp.Main)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenRoot(mf.Dir)
	if err != nil {
		return err
	}
	defer dst.Close()
	c := headcopy.NewCopier(ctx, src, dst)
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
			todo = c.Walk(p, m, todo)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	// Only what the new head ignores too is copied: a copy its own rules
	// do not ignore (a head made from a revision whose .gitignore is
	// older) would be captured by its next checkpoint.
	ignored, err := rp.Run(ctx, gitcmd.Cmd{
		GitDir: mf.Admin, CommonDir: rp.Common, WorkTree: mf.Dir, Dir: mf.Dir,
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
		if err := c.Copy(p); err != nil {
			return err
		}
	}
	return nil
}
