package gitbackend

import (
	"sync/atomic"
	"time"
)

// seams are what the tests set on a Backend (through export_test.go),
// each a no-op or the default when unset, so tests with their own
// backends run in parallel.
type seams struct {
	onStart func(args []string) // every git process started
	backoff time.Duration       // the first push retry's wait (0: defaultPushBackoff)
	slots   int                 // pushes at once (0: pushSlots)

	// crash is called at each crash point: the kill tests stop a helper
	// process there.
	crash func(name string)

	fromDiskMin   int          // see fromDiskMin (0: the default)
	diskCopies    atomic.Int64 // files new heads copied from other heads
	afterDiskCopy func(dir string)
	noSeeds       bool               // new heads are never made from seeds
	seeded        atomic.Int64       // heads made from seeds
	watchedLooks  [2][3]atomic.Int64 // watched checkpoints, then statuses, by what they looked at (see watched.go)
}

// crashPoint marks a place where a crash must leave a recoverable head.
func (b *Backend) crashPoint(name string) {
	if b.seams.crash != nil {
		b.seams.crash(name)
	}
}
