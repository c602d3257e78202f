package gitbackend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/groveworks/grove/backend"
)

// seedIndex copies the head's index to a private index in its git dir, so
// that git's stat cache stays warm.
func (h *head) seedIndex(mf manifest, name string) (string, error) {
	priv := filepath.Join(mf.Admin, name)
	_ = os.Remove(priv)
	return priv, copyIndex(filepath.Join(mf.Admin, "index"), priv)
}

// copyIndex copies an index file keeping its modification time: git
// trusts an entry's cached stat data only if the file changed before the
// index was written, so a copy stamped "now" would hide a same-size edit
// made in the second the index was written ("racy git").
func copyIndex(src, dst string) error {
	st, err := os.Stat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // git starts an empty index
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, data, 0o644)
	}
	if err == nil {
		err = os.Chtimes(dst, st.ModTime(), st.ModTime())
	}
	return err
}

// indexSwap is the head's index.lock taken with the private index as its
// content: git's own lock protocol, so a concurrent git command sees the
// old index or the new one, never a mix.
type indexSwap struct {
	priv, lockPath, index string
}

// lockIndex takes the head's index.lock by hard-linking the private index
// as it, waiting while a git command holds the lock until ctx ends. A lock
// grove's swap leaves behind is recognizable: it is the private index's
// inode.
func (h *head) lockIndex(ctx context.Context, mf manifest, priv string) (*indexSwap, error) {
	s := &indexSwap{priv: priv, lockPath: filepath.Join(mf.Admin, indexLock), index: filepath.Join(mf.Admin, "index")}
	delay := time.Millisecond
	for {
		err := os.Link(priv, s.lockPath)
		if err == nil {
			crashPoint("index:locked")
			return s, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// index.lock is held by a git command: wait for it.
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &backend.Error{Code: backend.Canceled, Op: "gitbackend: index lock", Head: mf.Name,
				Err: fmt.Errorf("waiting for %s, held by a git command: %w", s.lockPath, ctx.Err())}
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// commit renames the lock over the index, releasing it.
func (s *indexSwap) commit() error {
	if err := os.Rename(s.lockPath, s.index); err != nil {
		_ = os.Remove(s.lockPath)
		return err
	}
	return os.Remove(s.priv)
}

// abort releases the lock, leaving the index as it was.
func (s *indexSwap) abort() { _ = os.Remove(s.lockPath) }

// swapIndex makes the private index the head's index.
func (h *head) swapIndex(ctx context.Context, mf manifest, priv string) error {
	s, err := h.lockIndex(ctx, mf, priv)
	if err != nil {
		return err
	}
	return s.commit()
}
