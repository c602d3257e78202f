package gitbackend

// crashPoint marks a place where a crash must leave a recoverable head.
// Tests that kill a helper process at such a place set crashHook (through
// export_test.go); in normal use it is nil and costs one comparison.
func crashPoint(name string) {
	if crashHook != nil {
		crashHook(name)
	}
}

var crashHook func(name string)
