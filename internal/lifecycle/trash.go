// Package lifecycle is what happens to a head around its life in a
// repository, beside the git backend's core: the files a new head is
// given from the main checkout (CopyIncludes, with .worktreeinclude read
// from the user's checkout, never a head), retention of checkpoints
// (Retain), and the deletion of destroyed heads' directories in the
// background (Deleter, Trashed). The setup and teardown hooks run through
// sandbox.RunHook. Everything reads the repository's records
// (internal/registry) as hostile input and never follows a link an agent
// planted: a trashed directory is found from the tombstones, never from a
// list of paths an agent could rewrite.
//
// Destroying a head deletes its directory in the background. The directory
// is first renamed into a trash directory beside it (same parent, so the
// same file system: one rename, whatever the head holds), its registration
// is removed and its manifest becomes a tombstone; only then are its files
// deleted, by a Deleter. A process that exits or dies before that ends
// leaves the renamed directory, which the next open of the workspace (or
// Reconcile) deletes (Trashed):
//
//	<parent of the head>/.grove-trash/<head-id>.<unix nanoseconds>
//
// Head names cannot start with a dot, so no head is ever named like the
// trash directory.
package lifecycle

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/registry"
	"github.com/groveworks/grove/internal/tasks"
)

// Deleter deletes trashed directories in the background, at most one
// deletion of a path at a time per backend. Close stops a deletion
// between two entries; what is left is deleted by the next open.
type Deleter struct{ tasks tasks.Group }

// Delete starts deleting path unless that already runs.
func (d *Deleter) Delete(path string) {
	d.tasks.Start(path, func(ctx context.Context) {
		if removeAll(ctx, path) == nil {
			// An emptied trash directory goes too (it fails while another
			// head's deletion is still there, which is fine).
			_ = os.Remove(filepath.Dir(path))
		}
	})
}

// removeAll removes path and what it holds, as os.RemoveAll does, stopping
// between two entries when ctx ends. Links are removed, never followed.
func removeAll(ctx context.Context, path string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return os.RemoveAll(path) // unreadable: os.RemoveAll does what can be done
		}
		for _, e := range ents {
			if err := removeAll(ctx, filepath.Join(path, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Trashed lists what destroyed heads left in the recorded trash
// directories: entries named after a head whose tombstone (or manifest,
// for a destroy under way) says it was destroyed from beside that trash
// directory. Only real directories are listed (a symlink planted in a
// trash directory is never followed, and never listed). An empty trash
// directory is removed. It costs what the trash holds, not what history
// does.
func Trashed(reg registry.Dir) []string {
	var out []string
	for _, td := range reg.TrashDirs() {
		if fi, err := os.Lstat(td); err != nil || !fi.IsDir() {
			continue
		}
		ents, err := os.ReadDir(td)
		if err != nil {
			continue
		}
		if len(ents) == 0 {
			// Emptied by a deleter that did not live to remove it.
			_ = os.Remove(td)
			continue
		}
		for _, e := range ents {
			id, _, ok := strings.Cut(e.Name(), ".")
			if !e.IsDir() || !ok || !registry.ValidHeadID(grove.HeadID(id)) || !registry.OwnTrashEntry(e.Name(), grove.HeadID(id)) {
				continue
			}
			mf, err := reg.ReadManifest(grove.HeadID(id))
			if err != nil || !(mf.State == grove.StateDestroyed || mf.Destroying) || registry.TrashDir(mf.Dir) != td {
				continue
			}
			out = append(out, filepath.Join(td, e.Name()))
		}
	}
	return out
}

// Wait returns once no deletion runs, or when ctx ends (its error).
func (d *Deleter) Wait(ctx context.Context) error { return d.tasks.Wait(ctx) }

// Close stops the deletions between two entries and waits for them; what
// is left is deleted by the next open.
func (d *Deleter) Close() { d.tasks.Close() }
