//go:build !unix

package gitbackend

const (
	// oNoFollow makes an open fail on a symlink rather than follow it; on
	// this system os.OpenFile with O_CREATE|O_EXCL does not follow one.
	oNoFollow = 0
	// oNonBlock makes an open of a FIFO return at once; this system has
	// none.
	oNonBlock = 0
)
