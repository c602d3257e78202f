package gitbackend

import "time"

// SetCrashHook has f called at each of b's crash points: the kill tests
// stop a helper process there. It must be called before b is used.
func SetCrashHook(b *Backend, f func(name string)) { b.seams.crash = f }

// SetProcessHook has f called with the arguments of every git process b
// starts; it must be called before b's first workspace is opened.
func SetProcessHook(b *Backend, f func(args []string)) { b.seams.onStart = f }

// SetPushBackoff makes b's background pushes wait backoff before their
// first retry.
func SetPushBackoff(b *Backend, backoff time.Duration) { b.seams.backoff = backoff }

// SetPushSlots makes each of b's push queues run n pushes at once; it
// must be called before b's first push.
func SetPushSlots(b *Backend, n int) { b.seams.slots = n }

// QueuedPushes is how many of b's pushes wait for a push slot.
func QueuedPushes(b *Backend) int { return b.pushes.batch.waiting() }

// SetFromDiskMin makes b's heads of at least n files copy their files
// from another head.
func SetFromDiskMin(b *Backend, n int) { b.seams.fromDiskMin = n }

// DiskCopies is how many files b's new heads have copied from other heads.
func DiskCopies(b *Backend) int64 { return b.seams.diskCopies.Load() }

// SetAfterDiskCopy makes f run with each new head's directory once every
// file of it was copied, before git checks the copies.
func SetAfterDiskCopy(b *Backend, f func(dir string)) { b.seams.afterDiskCopy = f }

// SetNoSeeds keeps b's new heads from being made from seeds.
func SetNoSeeds(b *Backend) { b.seams.noSeeds = true }

// Seeded is how many of b's new heads were made from seeds.
func Seeded(b *Backend) int64 { return b.seams.seeded.Load() }

// WatchedLooks is how many of b's watched whole checkpoints (status
// false) or statuses looked at nothing (nothing had changed), at the
// changed paths alone, and at every file.
func WatchedLooks(b *Backend, status bool) (nothing, changed, all int64) {
	l := &b.seams.watchedLooks[0]
	if status {
		l = &b.seams.watchedLooks[1]
	}
	return l[lookedAtNothing].Load(), l[lookedAtChanged].Load(), l[lookedAtAll].Load()
}

// QueuedFetches is how many of b's take-overs wait to fetch.
func QueuedFetches(b *Backend) int { return b.takeOvers.fetches.waiting() }
