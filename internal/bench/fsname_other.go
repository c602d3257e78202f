//go:build !linux

package bench

import "runtime"

// fsName names the file system dir is on: here, the system's.
func fsName(string) string { return runtime.GOOS }
