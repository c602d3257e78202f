package gitbackend

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

// Destroying a head deletes its directory in the background. The directory
// is first renamed into a trash directory beside it (same parent, so the
// same file system: one rename, whatever the head holds), its registration
// is removed and its manifest becomes a tombstone; only then are its files
// deleted, by a goroutine. A process that exits or dies before that ends
// leaves the renamed directory, which the next open of the workspace (or
// Reconcile) deletes: it is found from the tombstones, never from a list
// of paths an agent could rewrite.
//
//	<parent of the head>/.grove-trash/<head-id>.<unix nanoseconds>
//
// Head names cannot start with a dot, so no head is ever named like the
// trash directory.

// deleter deletes trashed directories in the background, at most one
// deletion of a path at a time per backend. Close stops a deletion
// between two entries; what is left is deleted by the next open.
type deleter struct{ tasks tasks.Group }

// delete starts deleting path unless that already runs.
func (d *deleter) delete(path string) {
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

// trashed lists what destroyed heads left in the recorded trash
// directories: entries named after a head whose tombstone (or manifest,
// for a destroy under way) says it was destroyed from beside that trash
// directory. Only real directories are listed (a symlink planted in a
// trash directory is never followed, and never listed). An empty trash
// directory is removed. It costs what the trash holds, not what history
// does.
func (w *workspace) trashed() []string {
	var out []string
	for _, td := range w.meta.TrashDirs() {
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
			mf, err := w.meta.ReadManifest(grove.HeadID(id))
			if err != nil || !(mf.State == grove.StateDestroyed || mf.Destroying) || registry.TrashDir(mf.Dir) != td {
				continue
			}
			out = append(out, filepath.Join(td, e.Name()))
		}
	}
	return out
}

// finishDestroys finishes the destroys that were interrupted (their
// manifest still says Destroying and nobody holds their head lock), then
// starts deleting whatever destroyed heads left in the trash. A destroy
// interrupted before its directory moved did not happen: its head stays
// live. Callers hold the repository lock.
func (w *workspace) finishDestroys() error {
	err := w.recoverInterrupted("finish an interrupted destroy", func(mf *registry.Manifest) bool { return mf.Destroying },
		func(mf *registry.Manifest) error { return w.finishDestroy(mf.ID) })
	if err != nil {
		return err
	}
	for _, p := range w.trashed() {
		w.b.trash.delete(p)
	}
	return nil
}

// finishDestroy ends the interrupted destroy of head id; callers hold its
// head lock and the repository lock.
func (w *workspace) finishDestroy(id grove.HeadID) error {
	mf, err := w.meta.ReadManifest(id)
	if err != nil || !mf.Destroying {
		return nil // finished meanwhile
	}
	if _, err := os.Lstat(mf.Dir); err == nil {
		mf.Destroying = false // never moved: the head is whole
	} else {
		if err := w.removeAdmin(mf.Admin); err != nil {
			return &grove.Error{Code: grove.Internal, Op: "gitbackend: finish destroy", Head: mf.Name, Err: err}
		}
		mf.Destroying = false
		mf.State = grove.StateDestroyed
	}
	if err := w.meta.WriteManifest(mf); err != nil {
		return &grove.Error{Code: grove.Internal, Op: "gitbackend: finish destroy", Head: mf.Name, Err: err}
	}
	return nil
}

// WaitDeletions waits until the background deletions of destroyed heads'
// directories this backend started have ended, or ctx ends (its error is
// returned then). Destroy returns before its head's files are deleted;
// a program that must see them gone (or exits and wants the disk space
// back now rather than at the next open of the workspace) calls this.
func (b *Backend) WaitDeletions(ctx context.Context) error { return b.trash.tasks.Wait(ctx) }
