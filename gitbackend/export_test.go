package gitbackend

import "time"

// SetCrashHook lets the kill tests stop a helper process at a crash point.
func SetCrashHook(f func(name string)) { crashHook = f }

// SetProcessHook has f called with the arguments of every git process b
// starts; it must be called before b's first workspace is opened.
func SetProcessHook(b *Backend, f func(args []string)) { b.onStart = f }

// SetPushBackoff makes background pushes wait backoff before their first
// retry; the returned function restores the default.
func SetPushBackoff(backoff time.Duration) func() {
	b := pushBackoff
	pushBackoff = backoff
	return func() { pushBackoff = b }
}
