package gitbackend

import (
	"os"

	"golang.org/x/sys/unix"
)

// openedAlone reports whether f, a file of grove's own, is open nowhere
// else (no other descriptor, no mapping: a git reading it as an index),
// and keeps it so, by a write lease, until release: another open of it
// waits for the release (or the kernel's lease-break time).
func openedAlone(f *os.File) (release func(), ok bool) {
	fd := int(f.Fd())
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return nil, false
	}
	return func() { _, _ = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK) }, true
}
