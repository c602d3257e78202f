//go:build unix

package regfile

import "syscall"

const (
	// ONoFollow makes an open fail on a symlink rather than follow it.
	ONoFollow = syscall.O_NOFOLLOW
	// ONonBlock makes an open of a FIFO return at once.
	ONonBlock = syscall.O_NONBLOCK
)
