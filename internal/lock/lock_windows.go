// On Windows a lock is a LockFileEx lock
// (LOCKFILE_EXCLUSIVE_LOCK|LOCKFILE_FAIL_IMMEDIATELY) on one byte far past
// the end of the file: Windows locks are mandatory, and locking the bytes
// the holder writes its record into would stop others from reading who
// holds the lock. The lock belongs to the handle, so two Lock values
// conflict within one process too, and Windows releases it when the handle
// is closed or its process dies; Unlock also releases it explicitly, as
// Windows asks, since the release on close is not immediate.
//
// A file is opened with FILE_FLAG_OPEN_REPARSE_POINT, so a symlink or
// junction in the last element is opened itself, never followed, and then
// refused. Windows has no FIFOs in the file namespace, so there is nothing
// to open without blocking.
//
// A recorded holder is dead when OpenProcess finds no process with its PID,
// or finds one that has exited (GetExitCodeProcess answers something else
// than STILL_ACTIVE). A process that exited with code 259, the value of
// STILL_ACTIVE, looks alive: its lock is reported Busy, never stolen.

package lock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// openNoFollow opens path with flag and perm, refusing a symlink or any
// other reparse point in the last element (with an error matching
// syscall.ELOOP), as O_NOFOLLOW does on Unix.
func openNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.FILE_FLAG_OPEN_REPARSE_POINT, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("a reparse point: %w", syscall.ELOOP)}
	}
	return f, nil
}

// lockOffset is where the locked byte lies: far past any record a holder
// writes, so the record stays readable by others.
const lockOffset = 1 << 62

// lockRange returns the Overlapped that names the locked byte.
func lockRange() *windows.Overlapped {
	return &windows.Overlapped{Offset: uint32(lockOffset & 0xffffffff), OffsetHigh: uint32(lockOffset >> 32)}
}

// tryLockFile takes the exclusive lock on f without waiting: an error
// matching syscall.EWOULDBLOCK means someone holds it.
func tryLockFile(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, lockRange())
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return syscall.EWOULDBLOCK
	}
	return err
}

// unlockFile releases the lock on f before f is closed.
func unlockFile(f *os.File) {
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockRange())
}

// stillActive is the exit code GetExitCodeProcess answers for a process
// that is still running (STILL_ACTIVE).
const stillActive = 259

// processGone reports whether no running process has the given PID.
func processGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// ERROR_INVALID_PARAMETER: no process has this PID. Anything else
		// (access denied) means one does.
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code != stillActive
}
