//go:build !linux

package changes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// Watcher records the paths of one tree that changed: on this system,
// none (New is errors.ErrUnsupported).
type Watcher struct{}

// New is errors.ErrUnsupported here: callers scan.
func New(root string) (*Watcher, error) {
	return nil, fmt.Errorf("changes: watching %s on %s: %w", root, runtime.GOOS, errors.ErrUnsupported)
}

// Close does nothing.
func (w *Watcher) Close() error { return nil }

// Sync is errors.ErrUnsupported.
func (w *Watcher) Sync(context.Context) (Mark, error) { return 0, errors.ErrUnsupported }

// Changed is never complete.
func (w *Watcher) Changed(Mark) ([]string, bool) { return nil, false }

// Forget does nothing.
func (w *Watcher) Forget(Mark) {}
