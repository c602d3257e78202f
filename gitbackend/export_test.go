package gitbackend

import "time"

// SetCrashHook lets the kill tests stop a helper process at a crash point.
func SetCrashHook(f func(name string)) { crashHook = f }

// SetProcessHook has f called with the arguments of every git process b
// starts; it must be called before b's first workspace is opened.
func SetProcessHook(b *Backend, f func(args []string)) { b.onStart = f }

// SetPushBackoff makes b's background pushes wait backoff before their
// first retry.
func SetPushBackoff(b *Backend, backoff time.Duration) { b.backoff = backoff }

// SetFromDiskMin makes heads of at least n files copy their files from
// another head; the returned function restores the default.
func SetFromDiskMin(n int) func() {
	old := fromDiskMin
	fromDiskMin = n
	return func() { fromDiskMin = old }
}

// DiskCopies is how many files new heads have copied from other heads.
func DiskCopies() int64 { return diskCopies.Load() }

// SetAfterDiskCopy makes f run with a new head's directory once every file
// of it was copied, before git checks the copies; the returned function
// restores the default.
func SetAfterDiskCopy(f func(dir string)) func() {
	old := afterDiskCopy
	afterDiskCopy = f
	return func() { afterDiskCopy = old }
}
