package changes

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// watchMask is what a directory's watch reports: every change of an
// entry, and of the directory itself.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// syncWait bounds how long Sync waits for its cookie's event.
const syncWait = 10 * time.Second

// maxTries is how many times Sync watches afresh after losses before it
// gives up.
const maxTries = 5

// Watcher records the paths of one tree that changed.
type Watcher struct {
	root    string
	ifd     int      // the inotify instance
	queue   *os.File // the same, read by run (through the runtime's poller: Close ends a read)
	cookies int      // the watcher's own directory, for Sync's barrier
	cookieD string   // its path
	cookieW int32    // its watch
	done    chan struct{}

	mu      sync.Mutex
	seq     Mark            // the last event's number
	changed map[string]Mark // slash path from root -> the last change's number
	lost    Mark            // the number at the last loss; 0: none
	stale   bool            // a loss since the tree was last watched whole
	blind   bool            // a directory of the tree is not watched (one it may not read)
	broken  error           // watching cannot go on (a watch limit): every Changed is incomplete
	wds     map[int32]string
	dirs    map[string]int32 // slash path ("" is the root) -> its watch
	rootID  [2]uint64        // the root's device and inode when it was watched
	waiting map[string]chan struct{}
	closed  bool
}

// New watches the tree at root. It fails with the error of a watch it
// could not add (a per-user limit is met) or of the kernel's instance.
func New(root string) (*Watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("changes: %w", err)
	}
	// Marks start at 1: 0 is no Mark.
	w := &Watcher{root: filepath.Clean(root), ifd: fd, queue: os.NewFile(uintptr(fd), "inotify"), cookies: -1, done: make(chan struct{}), seq: 1,
		changed: map[string]Mark{}, wds: map[int32]string{}, dirs: map[string]int32{}, waiting: map[string]chan struct{}{}}
	if err := w.start(); err != nil {
		_ = w.queue.Close()
		w.dropCookies()
		return nil, fmt.Errorf("changes: watching %s: %w", root, err)
	}
	go w.run()
	return w, nil
}

// start makes the cookie directory and watches it and the tree.
func (w *Watcher) start() error {
	var err error
	if w.cookieD, err = os.MkdirTemp("", "grove-changes-"); err != nil {
		return err
	}
	if w.cookies, err = unix.Open(w.cookieD, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		return err
	}
	wd, err := unix.InotifyAddWatch(w.ifd, w.cookieD, unix.IN_CREATE|unix.IN_DONT_FOLLOW|unix.IN_ONLYDIR)
	if err != nil {
		return err
	}
	w.cookieW = int32(wd)
	// The directory watched is the one opened.
	var a, b unix.Stat_t
	if unix.Fstat(w.cookies, &a) != nil || unix.Lstat(w.cookieD, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		return errors.New("the watcher's own directory was replaced")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watchAll()
	return w.broken
}

// dropCookies removes the cookie directory.
func (w *Watcher) dropCookies() {
	if w.cookies >= 0 {
		_ = unix.Close(w.cookies)
		w.cookies = -1
	}
	if w.cookieD != "" {
		_ = os.Remove(w.cookieD)
	}
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
	err := w.queue.Close()
	<-w.done
	w.dropCookies()
	return err
}

// Sync waits until every change made before it was called is recorded,
// watching the tree afresh first after a loss, and returns the Mark that
// follows them. Its errors are ctx's and the watcher's own (closed,
// unable to watch any more, no word from the kernel in time, or losing
// events as fast as it watches again): a caller scans.
func (w *Watcher) Sync(ctx context.Context) (Mark, error) {
	for range maxTries {
		m, again, err := w.sync(ctx)
		if !again {
			return m, err
		}
	}
	return 0, errors.New("changes: events lost at every try")
}

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
	if w.stale || !w.rootIs() {
		w.rewatch()
	}
	lost := w.lost
	var rnd [16]byte
	_, _ = rand.Read(rnd[:])
	name := hex.EncodeToString(rnd[:])
	ch := make(chan struct{})
	w.waiting[name] = ch
	w.mu.Unlock()
	fd, err := unix.Openat(w.cookies, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == nil {
		_ = unix.Close(fd)
		t := time.NewTimer(syncWait)
		select {
		case <-ch:
		case <-w.done:
			err = errors.New("changes: watcher stopped")
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
			err = errors.New("changes: no word from the kernel of the watcher's own file")
		}
		t.Stop()
		_ = unix.Unlinkat(w.cookies, name, 0)
	}
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
// complete is false when something was lost after since, or a directory
// is not watched, and a Mark of 0 (no Sync) is never complete. A path is
// reported, not what happened to it: it may be a file, a directory (all
// of whose contents may have changed), or gone.
func (w *Watcher) Changed(since Mark) (paths []string, complete bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, m := range w.changed {
		if m > since {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, since != 0 && w.broken == nil && !w.blind && w.lost <= since
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

// run records the kernel's events until the watcher is closed.
func (w *Watcher) run() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.queue.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			w.mu.Lock()
			w.lose(err)
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:min(n, off+unix.SizeofInotifyEvent+size)]), "\x00")
			w.event(wd, mask, name)
			off += unix.SizeofInotifyEvent + size
		}
		w.mu.Unlock()
	}
}

// event records one event. w.mu is held.
func (w *Watcher) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.lose(nil)
		return
	}
	if wd == w.cookieW {
		if ch, ok := w.waiting[name]; ok && mask&unix.IN_CREATE != 0 {
			close(ch)
			delete(w.waiting, name)
		}
		return
	}
	dir, ok := w.wds[wd]
	if !ok {
		return // a watch dropped since
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.wds, wd)
		if w.dirs[dir] == wd {
			delete(w.dirs, dir)
		}
		if dir == "" {
			w.lose(nil) // the tree itself went
		}
		return
	}
	if mask&(unix.IN_MOVE_SELF|unix.IN_DELETE_SELF) != 0 {
		if dir == "" || mask&unix.IN_MOVE_SELF != 0 {
			// The tree moved, or a directory did (its watch now reports
			// under its old name): start again.
			w.lose(nil)
		}
		return
	}
	if name == "" {
		return
	}
	rel := name
	if dir != "" {
		rel = dir + "/" + name
	}
	w.seq++
	w.changed[rel] = w.seq
	if mask&unix.IN_ISDIR == 0 {
		return
	}
	switch {
	case mask&unix.IN_MOVED_FROM != 0:
		w.lose(nil)
	case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && name != ".git":
		// Watched first, then listed: what is made inside meanwhile is
		// listed, or reported, or both.
		w.watchTree(rel, true)
	case mask&unix.IN_DELETE != 0:
		for d, dwd := range w.dirs {
			if d == rel || strings.HasPrefix(d, rel+"/") {
				delete(w.dirs, d)
				delete(w.wds, dwd)
			}
		}
	}
}

// watchTree watches the directory at slash path rel and every directory
// under it (never through a link, never into a .git), recording what it
// finds below rel as changed when record is set. A directory gone
// meanwhile is passed over (its removal is reported); one that may not be
// read leaves the watcher blind; a watch limit breaks it. w.mu is held.
func (w *Watcher) watchTree(rel string, record bool) {
	full := filepath.Join(w.root, filepath.FromSlash(rel))
	wd, err := unix.InotifyAddWatch(w.ifd, full, watchMask)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP:
		return // gone, or not a directory (a link) any more: reported
	case err == unix.EACCES || err == unix.EPERM:
		w.blind = true
		return
	case err != nil:
		w.lose(err)
		return
	}
	w.wds[int32(wd)] = rel
	w.dirs[rel] = int32(wd)
	ents, err := os.ReadDir(full)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.blind = true
		}
		return
	}
	for _, e := range ents {
		child := e.Name()
		if rel != "" {
			child = rel + "/" + child
		}
		if record {
			w.seq++
			w.changed[child] = w.seq
		}
		if e.IsDir() && e.Name() != ".git" {
			w.watchTree(child, record)
		}
	}
}

// watchAll watches the whole tree, noting the root's identity. w.mu is
// held.
func (w *Watcher) watchAll() {
	w.blind, w.stale = false, false
	var st unix.Stat_t
	if unix.Lstat(w.root, &st) == nil {
		w.rootID = [2]uint64{st.Dev, st.Ino}
	}
	w.watchTree("", false)
}

// rootIs reports whether the root is still the directory watched (not
// one put in its place, with its parent moved away, say). w.mu is held.
func (w *Watcher) rootIs() bool {
	var st unix.Stat_t
	return unix.Lstat(w.root, &st) == nil && w.rootID == [2]uint64{st.Dev, st.Ino}
}

// lose records that changes may have gone unrecorded: err, when set, is
// the kernel's refusal of a watch, which breaks the watcher for good
// when it is a limit. w.mu is held.
func (w *Watcher) lose(err error) {
	w.seq++
	w.lost = w.seq
	w.stale = true
	if (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EMFILE)) && w.broken == nil {
		w.broken = fmt.Errorf("changes: %w", err)
	}
	// A cookie's event may be among those lost: its Sync tries again.
	for name, ch := range w.waiting {
		close(ch)
		delete(w.waiting, name)
	}
}

// rewatch drops every watch of the tree and watches it again. w.mu is
// held.
func (w *Watcher) rewatch() {
	for wd := range w.wds {
		_, _ = unix.InotifyRmWatch(w.ifd, uint32(wd))
	}
	clear(w.wds)
	clear(w.dirs)
	w.watchAll()
	// What was found is new to this watch: the loss covers it.
	w.seq++
	w.lost = w.seq
}
