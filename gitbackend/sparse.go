package gitbackend

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/internal/gitfmt"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/sparse"
)

// sparseArgs writes set, when not nil, into gitDir/info/sparse-checkout
// and returns the options that make the next git command, run with that
// git dir, apply it; nil for a head with the whole tree. The file is
// grove's, written afresh before each command that reads it (whatever is
// there, the agent's or a link, is removed first) and never read back.
func sparseArgs(gitDir string, set []string) ([]string, error) {
	if set == nil {
		return nil, nil
	}
	root, err := os.OpenRoot(gitDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if fi, err := root.Lstat("info"); err == nil && !fi.IsDir() {
		if err := root.Remove("info"); err != nil {
			return nil, err
		}
	}
	if err := root.Mkdir("info", 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	name := filepath.Join("info", "sparse-checkout")
	if err := root.RemoveAll(name); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(sparse.Set(set).Patterns())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return []string{"-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=true"}, nil
}

// markSparse gives the index at index — data, or read from the file when
// nil — the skip-worktree marks of head mf (see sparseMarks), through run;
// nothing for a head with the whole tree.
func markSparse(ctx context.Context, run func(context.Context, gitcmd.Cmd) (string, error), mf registry.Manifest, index string, data []byte) error {
	if mf.Sparse == nil {
		return nil
	}
	if data == nil {
		var err error
		if data, err = os.ReadFile(index); err != nil {
			return err
		}
	}
	unmark, mark, err := sparseMarks(data, mf.Dir, mf.Sparse)
	if err != nil {
		return err
	}
	return updateIndex(ctx, run, index, []indexStep{{unmark, "--no-skip-worktree"}, {mark, "--skip-worktree"}})
}

// runAs runs a git command in the place base names (its git dir, work
// tree and environment, the command's own environment after them).
func (w *workspace) runAs(base gitcmd.Cmd) func(context.Context, gitcmd.Cmd) (string, error) {
	return func(ctx context.Context, c gitcmd.Cmd) (string, error) {
		c.GitDir, c.CommonDir, c.WorkTree, c.Dir = base.GitDir, base.CommonDir, base.WorkTree, base.Dir
		c.Env = append(append([]string{}, base.Env...), c.Env...)
		return w.repo.Run(ctx, c)
	}
}

// sparseMarks decides, for the index data of a sparse head at dir with
// set, which entries a checkpoint must look at and which it must keep as
// they are: an entry whose file is on disk is looked at (its skip-worktree
// mark cleared: a file written outside the set is captured, never lost
// behind the mark); one outside the set whose file is not is kept
// (marked), never taken for a deletion. In the set, a missing file is a
// deletion, as in any head. Directories are looked up once each.
func sparseMarks(data []byte, dir string, set sparse.Set) (unmark, mark []string, err error) {
	for _, hashLen := range []int{sha1.Size, sha256.Size} {
		if unmark, mark, ok := sparseWalk(data, hashLen, dir, set); ok {
			return unmark, mark, nil
		}
	}
	return nil, nil, gitfmt.ErrDamagedIndex
}

func sparseWalk(data []byte, hashLen int, dir string, set sparse.Set) (unmark, mark []string, ok bool) {
	dirs := map[string]bool{}
	exists := func(d string) bool {
		if d == "." {
			return true
		}
		if e, ok := dirs[d]; ok {
			return e
		}
		fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(d)))
		e := err == nil && fi.IsDir()
		dirs[d] = e
		return e
	}
	_, ok = gitfmt.WalkIndex(data, hashLen, func(e *gitfmt.RawEntry) {
		if e.Flags&gitfmt.FlagStage != 0 || e.Mode == 0o160000 {
			return
		}
		p := string(e.Name)
		skipped := e.Ext&gitfmt.FlagSkipWorktree != 0
		present := false
		if d := p[:max(0, strings.LastIndexByte(p, '/'))]; d == "" || exists(d) {
			_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
			present = err == nil
		}
		switch {
		case skipped && present:
			unmark = append(unmark, p)
		case !skipped && !present && !set.Contains(p):
			mark = append(mark, p)
		}
	})
	return unmark, mark, ok
}
