//go:build unix

package gitbackend

import "syscall"

const (
	// oNoFollow makes an open fail on a symlink rather than follow it.
	oNoFollow = syscall.O_NOFOLLOW
	// oNonBlock makes an open of a FIFO return at once.
	oNonBlock = syscall.O_NONBLOCK
)
