package gitbackend

import (
	"context"
	"fmt"
	"strings"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/gitcmd"
)

// maxProjectFile bounds what ProjectFile reads.
const maxProjectFile = 1 << 20

// ProjectFile reads the file at path (a slash path from the top of the
// tree) in the commit the repository holding locator has checked out in
// its main worktree (its HEAD; a bare repository's HEAD), for the
// project's own configuration, such as the grove command's .grove.toml.
// It is read from that commit, never from a working tree: an agent can
// write files in its head and commit on its branch, but not move the main
// checkout's HEAD, so what it returns is the user's. A path the commit
// does not have is NotFound; one that is not a regular file there, or is
// over 1 MiB, is FailedPrecondition.
func (b *Backend) ProjectFile(ctx context.Context, locator, path string) ([]byte, error) {
	const op = "gitbackend: project file"
	r, err := b.enter(ctx, "ProjectFile")
	if err != nil {
		return nil, err
	}
	if err := backend.CheckPath(op, path); err != nil {
		return nil, err
	}
	out, err := r.Output(ctx, gitcmd.Cmd{Dir: locator, Discover: true, Args: []string{"rev-parse", "--path-format=absolute", "--git-common-dir"}})
	if err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return nil, err
		}
		return nil, &backend.Error{Code: backend.NotFound, Op: op, Path: locator, Err: err}
	}
	rp := &repo{r: r, common: strings.TrimSpace(out)}
	spec := "HEAD:" + path
	info, err := rp.git(ctx, "ls-tree", "-z", "--format=%(objectmode) %(objecttype) %(objectsize)", "HEAD", "--", path)
	if err != nil {
		if backend.CodeOf(err) == backend.Canceled {
			return nil, err
		}
		return nil, &backend.Error{Code: backend.NotFound, Op: op, Path: path, Err: fmt.Errorf("the repository's HEAD has no commit: %w", err)}
	}
	info = strings.TrimRight(info, "\x00")
	if info == "" {
		return nil, &backend.Error{Code: backend.NotFound, Op: op, Path: path, Err: fmt.Errorf("%s is not in the commit checked out (HEAD)", path)}
	}
	var mode, typ string
	var size int64
	if _, err := fmt.Sscanf(info, "%s %s %d", &mode, &typ, &size); err != nil || typ != "blob" || (mode != "100644" && mode != "100755") {
		return nil, &backend.Error{Code: backend.FailedPrecondition, Op: op, Path: path, Err: fmt.Errorf("%s is not a regular file in HEAD (%s)", path, info)}
	}
	if size > maxProjectFile {
		return nil, &backend.Error{Code: backend.FailedPrecondition, Op: op, Path: path, Err: fmt.Errorf("%s is %d bytes, over %d", path, size, maxProjectFile)}
	}
	return r.Run(ctx, gitcmd.Cmd{GitDir: rp.common, Dir: rp.common, Args: []string{"cat-file", "blob", spec}})
}
