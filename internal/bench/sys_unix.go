//go:build unix

package bench

import (
	"runtime"
	"syscall"
)

// peakRSS is the process's peak resident set size in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss // bytes there
	}
	return ru.Maxrss * 1024 // KiB on Linux and the BSDs
}

// flush writes every file system's dirty data to disk (sync(2)).
func flush() { syscall.Sync() }

// used is how many bytes of the file system dir is on are in use, once
// what was written is on disk.
func used(dir string) int64 {
	flush()
	var fs syscall.Statfs_t
	if syscall.Statfs(dir, &fs) != nil {
		return 0
	}
	return int64(fs.Blocks-fs.Bfree) * int64(fs.Bsize)
}
