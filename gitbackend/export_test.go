package gitbackend

// SetCrashHook lets the kill tests stop a helper process at a crash point.
func SetCrashHook(f func(name string)) { crashHook = f }
