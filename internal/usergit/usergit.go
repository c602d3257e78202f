// Package usergit runs the real git binary as a user's command line would
// (hooks, configuration and all), with a fixed identity and no user
// configuration, and makes repositories with it: the fixtures of tests and
// of the grove bench command, never grove's own commands (those go
// through internal/gitcmd).
package usergit

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Git runs the real git binary in dir with a fixed identity and no user
// configuration, as a user's command line would (hooks and all), and
// returns its trimmed output.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=user", "GIT_AUTHOR_EMAIL=user@example.com",
		"GIT_COMMITTER_NAME=user", "GIT_COMMITTER_EMAIL=user@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// InitRepo makes a repository at dir whose branch main holds exactly the
// files of files (modes and symlinks included), committed by plain git.
func InitRepo(ctx context.Context, dir string, files fs.FS) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := Git(ctx, dir, "init", "-q", "-b", "main"); err != nil {
		return err
	}
	if err := WriteFiles(dir, files); err != nil {
		return err
	}
	if _, err := Git(ctx, dir, "add", "-A", "-f"); err != nil {
		return err
	}
	_, err := Git(ctx, dir, "commit", "-q", "--allow-empty", "-m", "base")
	return err
}

// WriteFiles copies files into dir, keeping executable bits and symlinks.
func WriteFiles(dir string, files fs.FS) error {
	return fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(full, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := fs.ReadLink(files, p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			return os.Symlink(target, full)
		}
		data, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chmod(full, info.Mode().Perm())
	})
}
