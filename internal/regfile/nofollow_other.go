//go:build !unix

package regfile

const (
	// ONoFollow makes an open fail on a symlink rather than follow it; on
	// this system os.OpenFile with O_CREATE|O_EXCL does not follow one.
	ONoFollow = 0
	// ONonBlock makes an open of a FIFO return at once; this system has
	// none.
	ONonBlock = 0
)
