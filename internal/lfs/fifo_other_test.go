//go:build !unix

package lfs

import "os"

// mkfifo makes a plain file where the system has no FIFOs.
func mkfifo(path string) error { return os.WriteFile(path, []byte("not a fifo"), 0o644) }
