package gitfmt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove/internal/regfile"
)

// ReadGitFile returns the git dir a worktree's .git names: the file's
// "gitdir:" line for a linked worktree, the directory itself for a main
// worktree.
func ReadGitFile(dir string) (string, error) {
	dotgit := filepath.Join(dir, ".git")
	st, err := os.Lstat(dotgit)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return filepath.EvalSymlinks(dotgit)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", dotgit)
	}
	data, err := regfile.Read(dotgit, maxGitFile)
	if err != nil {
		return "", err
	}
	gitdir, ok := strings.CutPrefix(GitLine(data), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s is not a git file", dotgit)
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	if real, err := filepath.EvalSymlinks(gitdir); err == nil {
		return real, nil
	}
	return filepath.Clean(gitdir), nil
}

// GitLine reads a one-line file git keeps (.git, gitdir, commondir, HEAD)
// as git reads it: only the line end is dropped, so a path with a trailing
// blank names what git would open, not what a trimmed string would.
func GitLine(data []byte) string { return strings.TrimRight(string(data), "\r\n") }

// maxGitFile bounds the one-line files git keeps (.git, gitdir, commondir,
// HEAD) read here.
const maxGitFile = 1 << 20
