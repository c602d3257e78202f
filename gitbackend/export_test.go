package gitbackend

import "time"

// SetCrashHook lets the kill tests stop a helper process at a crash point.
func SetCrashHook(f func(name string)) { crashHook = f }

// SetProcessHook has f called with the arguments of every git process b
// starts; it must be called before b's first workspace is opened.
func SetProcessHook(b *Backend, f func(args []string)) { b.onStart = f }

// SetPushTiming makes background pushes try attempts times, waiting
// backoff before the first retry; the returned function restores the
// defaults.
func SetPushTiming(attempts int, backoff time.Duration) func() {
	a, b := pushAttempts, pushBackoff
	pushAttempts, pushBackoff = attempts, backoff
	return func() { pushAttempts, pushBackoff = a, b }
}
