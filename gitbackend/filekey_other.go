//go:build !unix

package gitbackend

import "io/fs"

// fileKey names a file by its identity where the system tells it; here it
// does not, and Status reads the head's index itself.
func fileKey(fs.FileInfo) (string, bool) { return "", false }
