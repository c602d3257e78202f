package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/groveworks/grove"
)

// maxProjectFile bounds what ProjectFile reads.
const maxProjectFile = 1 << 20

// ProjectFile reads the file at path (a slash path from the top of the
// tree) in the main working tree of the repository holding locator — the
// user's checkout — for the project's own configuration, such as the
// grove command's .grove.toml. It is never read from a head, nor from a
// commit or anything under the git dir: an agent can write its head's
// files and, from its head, the repository's refs and git dir (a sandboxed
// agent too: git in the head needs them), so a branch, HEAD or a commit
// could be the agent's. The main working tree is the one place an agent
// confined to its head cannot write. A repository without a main working
// tree (a bare one) has no project file: NotFound, as is a path the
// working tree does not have. One that is not a regular file (a symlink
// included), or is over 1 MiB, is FailedPrecondition. locator is checked as
// OpenWorkspace checks it.
func (b *Backend) ProjectFile(ctx context.Context, locator, path string) ([]byte, error) {
	const op = "gitbackend: project file"
	r, err := b.enter(ctx, "ProjectFile")
	if err != nil {
		return nil, err
	}
	if err := grove.CheckPath(op, path); err != nil {
		return nil, err
	}
	rp, err := b.locate(ctx, op, r, locator)
	if err != nil {
		return nil, err
	}
	b.keepLocated(locator, rp)
	if rp.Main == "" {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: path, Err: errors.New("the repository has no main working tree")}
	}
	root, err := os.OpenRoot(rp.Main)
	if err != nil {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: rp.Main, Err: err}
	}
	defer root.Close()
	name := filepath.FromSlash(path)
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &grove.Error{Code: grove.NotFound, Op: op, Path: path, Err: err}
	}
	if err != nil {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxProjectFile {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: path,
			Err: fmt.Errorf("%s in %s is not a regular file of at most %d bytes", path, rp.Main, maxProjectFile)}
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: path, Err: err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, &grove.Error{Code: grove.FailedPrecondition, Op: op, Path: path, Err: fmt.Errorf("%s is not a regular file", path)}
	}
	return io.ReadAll(io.LimitReader(f, maxProjectFile))
}
