// Package locate checks the repository git found from a path a caller
// gave (a locator) before grove opens it: whatever is in a head — its
// .git file, a repository of the agent's making in any of its directories
// — is the agent's to write, so a repository reached through a head, or
// through a .git that is no layout git makes, is refused. (A head grove
// recorded is found through its trust anchor instead; see
// internal/anchors.)
package locate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/registry"
)

// CheckLocator refuses a locator whose repository an agent in a head could
// have chosen. Inside a linked worktree (a head), git finds the repository
// through the worktree's .git file, which whoever works there can rewrite,
// and any directory of the head may hold a repository of the agent's
// making. So the checkout git found (the directory holding the .git that
// led to the repository, or a bare repository's own directory) must not
// lie inside a linked worktree (below a directory whose .git is a file); a
// .git directory must be the repository's own; and a .git file is
// followed only to one of the repository's worktree entries,
// common/worktrees/<id>, whose gitdir file names this .git file back, or
// to the git dir of a repository that is not bare (a separate git dir's),
// never to one inside the checkout, inside another git dir, or to another
// checkout's .git directory. (A head grove recorded is never located this
// way: see anchors.)
//
// It returns the checkout git found (top, "" when dir is inside the git
// dir) and whether its .git names the repository directly (its .git
// directory, or a .git file naming the common dir: a main checkout).
func CheckLocator(op, dir, common string, bare bool) (top string, direct bool, err error) {
	refuse := func(path, format string, args ...any) error {
		return &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: path,
			Err: fmt.Errorf("%s; open the repository from its main checkout instead", fmt.Sprintf(format, args...))}
	}
	place := common // where the repository is: a bare one, or one found from inside its git dir
	if !canon.WithinCanonical(dir, common) {
		top = dir
		for {
			if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
				break
			}
			parent := filepath.Dir(top)
			if parent == top {
				return "", false, refuse(dir, "git found the repository %s with no .git on the way", common)
			}
			top = parent
		}
		if direct, err = checkDotGit(refuse, top, common, bare); err != nil {
			return "", false, err
		}
		place = top
	} else if filepath.Base(common) == ".git" {
		place = filepath.Dir(common)
	}
	for up := filepath.Dir(place); ; up = filepath.Dir(up) {
		if fi, err := os.Lstat(filepath.Join(up, ".git")); err == nil && !fi.IsDir() {
			return "", false, refuse(place, "the repository lies inside the linked worktree %s", up)
		}
		if filepath.Dir(up) == up {
			return top, direct, nil
		}
	}
}

// checkDotGit checks the .git that led git from the checkout top to the
// repository common, as checkLocator says, and reports whether it names
// the repository directly. A .git file naming the .git directory of
// another checkout, or a git dir inside another repository's, is no
// layout git makes (an agent's, pointing its head at a repository of its
// making).
func checkDotGit(refuse func(path, format string, args ...any) error, top, common string, bare bool) (bool, error) {
	dotGit := filepath.Join(top, ".git")
	if canon.WithinCanonical(common, top) && dotGit != common {
		return false, refuse(dotGit, "the repository it leads to, %s, lies inside the checkout", common)
	}
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return false, refuse(dotGit, "%v", err)
	case fi.IsDir():
		if real, err := filepath.EvalSymlinks(dotGit); err != nil || real != common {
			return false, refuse(dotGit, "the .git directory is not the repository git found (%s)", common)
		}
		return true, nil
	case !fi.Mode().IsRegular():
		return false, refuse(dotGit, "the .git file is not a regular file")
	}
	data, err := os.ReadFile(dotGit)
	if err != nil {
		return false, refuse(dotGit, "%v", err)
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return false, refuse(dotGit, "the .git file names no gitdir")
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(top, target)
	}
	gitDir, err := filepath.EvalSymlinks(target)
	if err != nil {
		return false, refuse(dotGit, "%v", err)
	}
	if gitDir == common {
		switch {
		case bare:
			return false, refuse(dotGit, "it names the bare repository %s: a checkout's .git names a repository with a working tree", common)
		case filepath.Base(common) == ".git":
			return false, refuse(dotGit, "it names %s, the .git directory of another checkout", common)
		}
		if outer := enclosingGitDir(common); outer != "" {
			return false, refuse(dotGit, "it names %s, which lies inside the git dir %s", common, outer)
		}
		return true, nil
	}
	if filepath.Dir(gitDir) != filepath.Join(common, "worktrees") {
		return false, refuse(dotGit, "it names %s, which is neither the repository's git dir nor one of its worktrees", gitDir)
	}
	back, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
	if err != nil {
		return false, refuse(dotGit, "the worktree entry %s names no checkout back", gitDir)
	}
	backPath, err := filepath.EvalSymlinks(strings.TrimSpace(string(back)))
	if err != nil || backPath != dotGit {
		return false, refuse(dotGit, "the worktree entry %s belongs to another checkout", gitDir)
	}
	return false, nil
}

// enclosingGitDir returns the git dir (a directory holding HEAD, objects
// and refs) that holds dir, or "".
func enclosingGitDir(dir string) string {
	for up := filepath.Dir(dir); filepath.Dir(up) != up; up = filepath.Dir(up) {
		head, herr := os.Lstat(filepath.Join(up, "HEAD"))
		objs, oerr := os.Lstat(filepath.Join(up, "objects"))
		refs, rerr := os.Lstat(filepath.Join(up, "refs"))
		if herr == nil && oerr == nil && rerr == nil && head.Mode().IsRegular() && objs.IsDir() && refs.IsDir() {
			return up
		}
	}
	return ""
}

// CheckNotAHead refuses a repository whose main worktree is the directory
// of a head of another repository, in that repository's default heads
// directory (<repo>.grove/<name>, beside a checkout, a bare repository or
// a separate git dir's checkout): an agent that replaced its head's .git
// file with a repository of its own would otherwise have grove take its
// head for a repository, and make heads of it beside the real ones. (A
// head placed elsewhere with HeadSpec.Dir is not found this way: open such
// a workspace from the repository's main checkout.)
func CheckNotAHead(op, main string) error {
	if main == "" {
		return nil
	}
	owner, ok := strings.CutSuffix(filepath.Dir(main), ".grove")
	if !ok || owner == "" {
		return nil
	}
	for _, common := range ownerGitDirs(owner) {
		all, err := registry.Of(common).Manifests()
		if err != nil {
			continue
		}
		for _, mf := range all {
			if mf.Live() && mf.Dir == main {
				return &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: main,
					Err: fmt.Errorf("this is head %q of the repository %s, whose .git was replaced; open that repository instead", mf.Name, owner)}
			}
		}
	}
	return nil
}

// ownerGitDirs are the git dirs a heads directory's owner may have: its
// .git directory, the git dir its .git file names, or itself when bare.
func ownerGitDirs(owner string) []string {
	dirs := []string{owner}
	dotGit := filepath.Join(owner, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
	case fi.IsDir():
		dirs = append(dirs, dotGit)
	case fi.Mode().IsRegular():
		if data, err := os.ReadFile(dotGit); err == nil {
			if target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: "); ok {
				if !filepath.IsAbs(target) {
					target = filepath.Join(owner, target)
				}
				dirs = append(dirs, target)
			}
		}
	}
	return dirs
}
