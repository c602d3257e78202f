//go:build !unix

package gitbackend

// oNoFollow makes an open fail on a symlink rather than follow it; on
// this system os.OpenFile with O_CREATE|O_EXCL does not follow one.
const oNoFollow = 0
