//go:build unix

// On Unix a lock is a flock(2) lock on the whole file, a file is opened
// with O_NOFOLLOW|O_NONBLOCK (a symlink is refused by the kernel, a FIFO
// does not block the open), and a recorded holder is dead when kill(pid, 0)
// answers ESRCH.

package lock

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens path with flag and perm, refusing a symlink in the
// last element and never blocking on a FIFO.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
}

// tryLockFile takes the exclusive lock on f without waiting: an error
// matching syscall.EWOULDBLOCK means someone holds it.
func tryLockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// unlockFile releases f's flock itself: closing f alone would not while
// another descriptor of the same open file exists, as it does for a
// moment in every process this one forks before it execs.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// processGone reports whether no process has the given PID.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
