// Package changes learns which paths of a directory tree changed, from
// the kernel's file-system notifications (inotify, through fsnotify), so
// that a caller that scanned the tree once need only look at those paths
// afterwards.
//
// # Invariants
//
//   - Completeness is explicit. Changed says whether every change since a
//     Mark is among the paths it returns; it says no after anything that
//     could hide a change: the kernel's queue overflowed, a watch could
//     not be added (the per-user limit), a watched directory was renamed
//     (its watches would report its files under its old name), the
//     watcher's own error. A caller that is told no scans the tree, as it
//     would with no watcher at all.
//   - A Mark is a barrier: every change made to the tree before Sync was
//     called (by any process) is recorded by the time Sync returns its
//     Mark. Sync writes a file in a directory of the watcher's own,
//     outside the tree, and waits for its event: one inotify queue keeps
//     the order in which events happened.
//   - After a loss, the next Sync watches the tree afresh before it
//     returns, so that the scan the caller then makes is watched whole.
//   - A directory named .git is never entered (a nested repository's
//     administration changes at every git command run in it); its
//     creation or removal is a change of its path.
//
// # Caveats
//
// What the kernel does not report is not seen: a write through a shared
// memory mapping, a write to a file through a hard link that lives
// outside the tree, a change on a network file system made by another
// machine. Only Linux is watched; elsewhere New is
// errors.ErrUnsupported and callers scan.
//
// # Concurrency
//
// A Watcher's methods may be called from several goroutines. Its one
// goroutine is owned by the Watcher: Close stops it and waits.
package changes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// Mark is a point in a Watcher's record of changes (see Sync).
type Mark uint64

// Watcher records the paths of one tree that changed.
type Watcher struct {
	root    string
	cookies string // the watcher's own directory, for Sync's barrier
	fw      *fsnotify.Watcher
	done    chan struct{} // closed when run returns

	mu      sync.Mutex
	seq     Mark            // the last event's number
	changed map[string]Mark // slash path from root -> the last change's number
	lost    Mark            // the number at the last loss; 0: none
	stale   bool            // a loss since the tree was last watched whole
	broken  error           // watching cannot go on (a watch limit): every Changed is incomplete
	dirs    map[string]bool // the directories watched, slash paths ("" is the root)
	waiting map[string]chan struct{}
	next    int // the next cookie's number
	closed  bool
}

// New watches the tree at root. It fails with errors.ErrUnsupported
// where the system cannot be watched, and with the error of a watch it
// could not add (a per-user watch limit is met).
func New(root string) (*Watcher, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("changes: watching %s: %w", runtime.GOOS, errors.ErrUnsupported)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	cookies, err := os.MkdirTemp("", "grove-changes-")
	if err != nil {
		_ = fw.Close()
		return nil, fmt.Errorf("changes: %w", err)
	}
	w := &Watcher{root: filepath.Clean(root), cookies: cookies, fw: fw, done: make(chan struct{}),
		changed: map[string]Mark{}, dirs: map[string]bool{}, waiting: map[string]chan struct{}{}}
	err = fw.Add(cookies)
	if err == nil {
		err = w.watchTree("")
	}
	if err != nil {
		_ = fw.Close()
		_ = os.RemoveAll(cookies)
		return nil, fmt.Errorf("changes: watching %s: %w", root, err)
	}
	go w.run()
	return w, nil
}

// Close stops watching and waits for the watcher's goroutine. A second
// Close returns an error.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errors.New("changes: watcher already closed")
	}
	w.closed = true
	w.mu.Unlock()
	err := w.fw.Close()
	<-w.done
	_ = os.RemoveAll(w.cookies)
	return err
}

// Sync waits until every change made before it was called is recorded,
// watching the tree afresh first after a loss, and returns the Mark that
// follows them. Its errors are ctx's and the watcher's own (closed,
// unable to watch any more, or losing events as fast as it watches
// again).
func (w *Watcher) Sync(ctx context.Context) (Mark, error) {
	for range maxTries {
		m, again, err := w.sync(ctx)
		if !again {
			return m, err
		}
	}
	return 0, errors.New("changes: events lost at every try")
}

// maxTries is how many times Sync watches afresh after losses before it
// gives up.
const maxTries = 5

// sync is one try of Sync: again is true when events were lost while it
// waited (its cookie's among them, maybe).
func (w *Watcher) sync(ctx context.Context) (m Mark, again bool, err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, false, errors.New("changes: watcher closed")
	}
	if w.broken != nil {
		err := w.broken
		w.mu.Unlock()
		return 0, false, err
	}
	if w.stale {
		w.rewatch()
	}
	lost := w.lost
	name := strconv.Itoa(w.next)
	w.next++
	ch := make(chan struct{})
	w.waiting[name] = ch
	w.mu.Unlock()
	cookie := filepath.Join(w.cookies, name)
	err = os.WriteFile(cookie, nil, 0o600)
	if err == nil {
		select {
		case <-ch:
		case <-w.done:
			err = errors.New("changes: watcher stopped")
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	_ = os.Remove(cookie)
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiting, name)
	switch {
	case err != nil:
		return 0, false, err
	case w.broken != nil:
		return 0, false, w.broken
	case w.lost != lost:
		return 0, true, nil
	}
	return w.seq, false, nil
}

// Changed returns, sorted, the paths (slash-separated, from the root)
// changed after since, and whether they are every change after since:
// complete is false when something was lost after since, and a Mark of
// 0 (no Sync) is never complete. A path is reported, not what happened
// to it: it may be a file, a directory (all of whose contents may have
// changed), or gone.
func (w *Watcher) Changed(since Mark) (paths []string, complete bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, m := range w.changed {
		if m > since {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, since != 0 && w.broken == nil && w.lost <= since
}

// Forget drops what was recorded up to upTo: a Changed since an earlier
// Mark is incomplete afterwards.
func (w *Watcher) Forget(upTo Mark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, m := range w.changed {
		if m <= upTo {
			delete(w.changed, p)
		}
	}
	w.lost = max(w.lost, upTo)
}

// run records events until the watcher is closed.
func (w *Watcher) run() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.mu.Lock()
			w.lose(err)
			w.mu.Unlock()
		}
	}
}

// event records one event.
func (w *Watcher) event(ev fsnotify.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if dir, name := filepath.Split(ev.Name); filepath.Clean(dir) == w.cookies {
		if ch, ok := w.waiting[name]; ok && ev.Has(fsnotify.Create) {
			close(ch)
			delete(w.waiting, name)
		}
		return
	}
	rel, ok := w.rel(ev.Name)
	if !ok {
		if filepath.Clean(ev.Name) == w.root && (ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove)) {
			// The tree itself moved or went: its watch is gone.
			w.lose(nil)
		}
		return
	}
	w.seq++
	w.changed[rel] = w.seq
	switch {
	case ev.Has(fsnotify.Rename) && w.dirs[rel]:
		// A directory moved away keeps its watches, under its old name:
		// start again (rewatch removes them by the names they had).
		w.lose(nil)
	case ev.Has(fsnotify.Remove) && w.dirs[rel]:
		// The kernel forgot the watches of a directory deleted.
		for d := range w.dirs {
			if d == rel || strings.HasPrefix(d, rel+"/") {
				delete(w.dirs, d)
			}
		}
	case ev.Has(fsnotify.Create):
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() && path(rel).base() != ".git" {
			// Watched first, then listed: what is made inside meanwhile
			// is listed, or reported, or both.
			if err := w.watchTree(rel); err != nil {
				w.lose(err)
			}
		}
	}
}

// rel is the slash path of name from the root; ok is false for the root
// itself and for anything outside it.
func (w *Watcher) rel(name string) (string, bool) {
	r, err := filepath.Rel(w.root, name)
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// watchTree watches the directory at slash path rel and every directory
// under it, recording each path it finds below rel as changed (all but
// for the root, which the caller's scan covers). w.mu is held.
func (w *Watcher) watchTree(rel string) error {
	top := filepath.Join(w.root, filepath.FromSlash(rel))
	return filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == top {
				return err
			}
			return nil // gone meanwhile: its removal is reported
		}
		r, _ := w.rel(p)
		if p != top || rel != "" {
			w.seq++
			w.changed[r] = w.seq
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" && p != top {
			return filepath.SkipDir
		}
		if err := w.fw.Add(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) && p != top {
				return filepath.SkipDir
			}
			return err
		}
		// inotify follows a link: a directory swapped for one since it
		// was listed would have its target watched instead.
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			_ = w.fw.Remove(p)
			w.lose(nil)
			return filepath.SkipDir
		}
		w.dirs[r] = true
		return nil
	})
}

// lose records that changes may have gone unrecorded: err, when set and
// not the kernel's overflow, is a loss watching cannot recover from.
// w.mu is held.
func (w *Watcher) lose(err error) {
	w.seq++
	w.lost = w.seq
	w.stale = true
	// A cookie's event may be among those lost: its Sync tries again.
	for name, ch := range w.waiting {
		close(ch)
		delete(w.waiting, name)
	}
	if err != nil && !errors.Is(err, fsnotify.ErrEventOverflow) && w.broken == nil {
		w.broken = fmt.Errorf("changes: %w", err)
	}
}

// rewatch drops every watch of the tree and watches it again. w.mu is
// held.
func (w *Watcher) rewatch() {
	for d := range w.dirs {
		_ = w.fw.Remove(filepath.Join(w.root, filepath.FromSlash(d)))
	}
	clear(w.dirs)
	w.stale = false
	if err := w.watchTree(""); err != nil {
		w.lose(err)
	}
	// What was found is new to this watch: the loss covers it.
	w.lost = w.seq
}

// path is a slash path.
type path string

func (p path) base() string {
	if i := strings.LastIndexByte(string(p), '/'); i >= 0 {
		return string(p[i+1:])
	}
	return string(p)
}
