// Package lock provides the kernel file locks grove serializes on: the
// per-repository lock around ref updates and worktree administration, the
// per-head lock around checkpoint and restore, and the isolation lock of an
// isolated head.
//
// Locks are flock(2) locks on a file (LockFileEx on Windows, see
// lock_windows.go). They belong to an open file description (a handle), so
// two Lock values conflict even within one process, and the kernel releases
// a lock when its holder dies: a lock left by a killed process never blocks
// anyone. The holder records itself (PID, host, purpose,
// time) in the lock file, so a caller refused with Busy learns who holds it.
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/groveworks/grove"
)

// Owner is what a holder records in its lock file.
type Owner struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Purpose string    `json:"purpose"`
	Since   time.Time `json:"since"`
	Path    string    `json:"path,omitempty"` // the lock file's path, as the holder took it
}

func (o Owner) String() string {
	return fmt.Sprintf("pid %d on %s (%s) since %s", o.PID, o.Host, o.Purpose, o.Since.Format(time.RFC3339))
}

// Lock is a held lock. Its methods are safe for concurrent use.
type Lock struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// TryLock takes the lock at path without waiting, creating the file (and its
// directory) if needed. A lock held by anyone, in this process or another,
// is Busy, and the error names the holder when it recorded itself.
//
// Something else than a regular file at path (a symlink, a directory, a
// FIFO someone put there) is not a lock file: it is removed, never
// followed or opened for writing, and a lock file is made in its place —
// unless a process still holds the lock file it displaced (see
// displacedHolder): that is Busy, never a second holder.
func TryLock(path, purpose string) (*Lock, error) {
	const op = "lock: try"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: op, Path: path, Err: err}
	}
	f, err := openLockFile(path)
	if errors.Is(err, errDisplaced) {
		return nil, &grove.Error{Code: grove.Busy, Op: op, Path: path, Err: err}
	}
	if err != nil {
		return nil, &grove.Error{Code: grove.Internal, Op: op, Path: path, Err: err}
	}
	err = flock(f, path)
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			e := &grove.Error{Code: grove.Busy, Op: op, Path: path, Err: errors.New("held")}
			if o, ok := ReadOwner(path); ok {
				e.Err = fmt.Errorf("held by %s", o)
			}
			return nil, e
		}
		return nil, &grove.Error{Code: grove.Internal, Op: op, Path: path, Err: err}
	}
	host, _ := os.Hostname()
	rec, _ := json.Marshal(Owner{PID: os.Getpid(), Host: host, Purpose: purpose, Since: time.Now().UTC(), Path: path})
	// The record is advisory: a failure to write it does not fail the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(rec, '\n'), 0)
	}
	return &Lock{path: path, f: f}, nil
}

// errDisplaced says that a process still holds the lock file that was at
// a lock's path before something else took its place.
var errDisplaced = errors.New("held: the lock file was displaced (something else is at its path) while its holder still holds it")

// openLockFile opens the lock file at path, replacing whatever else is
// there once.
func openLockFile(path string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		f, err := openNoFollow(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err == nil {
			fi, serr := f.Stat()
			if serr == nil && fi.Mode().IsRegular() {
				return f, nil
			}
			_ = f.Close()
			if serr != nil {
				return nil, serr
			}
			err = fmt.Errorf("%s is not a regular file", path)
		}
		if attempt > 0 || errors.Is(err, fs.ErrPermission) {
			return nil, err
		}
		fi, lerr := os.Lstat(path)
		switch {
		case lerr != nil:
			return nil, err
		case displacedHolder(path):
			return nil, errDisplaced
		case fi.IsDir():
			err = os.RemoveAll(path)
		default:
			err = os.Remove(path) // a symlink goes, not what it leads to
		}
		if err != nil {
			return nil, err
		}
	}
}

// deadHolderGrace bounds how long TryLock waits for a lock whose recorded
// holder is dead. The kernel releases a dead process's lock once every
// descriptor of it is closed, and a child the holder was forking when it
// was killed can keep a copy open for a moment, until it execs or dies.
const deadHolderGrace = 2 * time.Second

// flock takes the lock on f without blocking on a live holder.
func flock(f *os.File, path string) error {
	var deadline time.Time
	for {
		err := tryLockFile(f)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		}
		// Once a dead holder was seen, its last descriptor is waited for
		// even if the record goes meanwhile (a clean Unlock erases it just
		// before it closes).
		if o, ok := ReadOwner(path); (!ok || !o.dead()) && deadline.IsZero() {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(deadHolderGrace)
		} else if time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// dead reports whether the owner is a process of this host that no longer
// exists.
func (o Owner) dead() bool {
	host, _ := os.Hostname()
	if o.Host != host || o.PID <= 0 || o.PID == os.Getpid() {
		return false
	}
	return processGone(o.PID)
}

// Acquire takes the lock at path, waiting while another holder has it, until
// ctx ends (Canceled, still matching the context's error). A lock this
// process holds wakes its waiters here the moment it is released; one
// another process holds is looked at again after a wait that doubles up
// to 64ms.
func Acquire(ctx context.Context, path, purpose string) (*Lock, error) {
	delay := time.Millisecond
	for {
		// Taken before the try, so that a release in between still wakes
		// this wait.
		freed := released.wait(path)
		l, err := TryLock(path, purpose)
		if grove.CodeOf(err) != grove.Busy {
			return l, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &grove.Error{Code: grove.Canceled, Op: "lock: acquire", Path: path, Err: ctx.Err()}
		case <-freed:
			t.Stop()
			continue
		case <-t.C:
		}
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// released wakes this process's Acquire calls waiting for a lock when
// the process releases it.
var released wakeups

// wakeups is a channel per path, closed when the lock at path is released.
type wakeups struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

// wait returns the channel the next release of path closes.
func (w *wakeups) wait(path string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = map[string]chan struct{}{}
	}
	c, ok := w.ch[path]
	if !ok {
		c = make(chan struct{})
		w.ch[path] = c
	}
	return c
}

// wake closes path's channel, if anyone waits.
func (w *wakeups) wake(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.ch[path]; ok {
		close(c)
		delete(w.ch, path)
	}
}

// ReadOwner returns the record the holder of the lock at path wrote, if
// there is one. A clean Unlock erases it; the record of a holder that died
// stays in the file until the next holder overwrites it (Dead tells that
// case; Held tells whether anyone holds the lock now).
func ReadOwner(path string) (Owner, bool) {
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return Owner{}, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Owner{}, false
	}
	data, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return Owner{}, false
	}
	var o Owner
	if json.Unmarshal(data, &o) != nil || o.PID == 0 {
		return Owner{}, false
	}
	return o, true
}

// Held reports whether someone holds the lock at path now.
func Held(path string) bool {
	l, err := TryLock(path, "probe")
	if err != nil {
		return grove.CodeOf(err) == grove.Busy
	}
	_ = l.Unlock()
	return false
}

// Dead reports the lock at path left by a holder that died holding it: its
// file still records the holder (a clean Unlock erases the record), that
// process is gone, and nobody holds the lock now. The kernel released the
// lock itself; only the record is left. It changes nothing (the probe
// takes the lock without recording itself); Clear erases the record.
func Dead(path string) (Owner, bool) {
	o, ok := ReadOwner(path)
	if !ok || !o.dead() {
		return Owner{}, false
	}
	f, err := openNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return Owner{}, false
	}
	defer f.Close()
	if err := tryLockFile(f); err != nil {
		return Owner{}, false // held: by a process that reused the PID, or a child
	}
	unlockFile(f)
	return o, true
}

// Clear erases the record a dead holder left in the lock file at path, by
// taking the lock and releasing it; a lock someone holds is Busy.
func Clear(path string) error {
	l, err := TryLock(path, "clear a dead holder's record")
	if err != nil {
		return err
	}
	return l.Unlock()
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Unlock releases the lock. A second Unlock is FailedPrecondition.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return &grove.Error{Code: grove.FailedPrecondition, Op: "lock: unlock", Path: l.path, Err: errors.New("not held")}
	}
	// A lock released cleanly leaves no record: a record in a lock file no
	// one holds was left by a holder that died (see Dead).
	_ = l.f.Truncate(0)
	// Released explicitly, not by the close: a process being started
	// holds a copy of the descriptor until it execs.
	unlockFile(l.f)
	err := l.f.Close()
	l.f = nil
	released.wake(l.path)
	if err != nil {
		return &grove.Error{Code: grove.Internal, Op: "lock: unlock", Path: l.path, Err: err}
	}
	return nil
}

// Shared is a process-wide set of values, one per key, kept only while
// someone holds it: the mutexes every handle of one head (or root) in the
// process shares. Its zero value is ready to use; it is safe for
// concurrent use.
type Shared[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]*shared[V]
}

type shared[V any] struct {
	v    V
	refs int
}

// Acquire returns the value of k (a zero V on first use) and the function
// that releases it: once every holder released it, the value is dropped,
// and the next Acquire of k starts from a zero V again.
func (s *Shared[K, V]) Acquire(k K) (*V, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[K]*shared[V]{}
	}
	e := s.m[k]
	if e == nil {
		e = &shared[V]{}
		s.m[k] = e
	}
	e.refs++
	var once sync.Once
	return &e.v, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if e.refs--; e.refs == 0 {
				delete(s.m, k)
			}
		})
	}
}

// Len is how many keys are held now.
func (s *Shared[K, V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
