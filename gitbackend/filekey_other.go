//go:build !unix

package gitbackend

import "io/fs"

// fileKey names a file by its identity where the system tells it; here it
// does not, and Status reads the head's index itself.
func fileKey(fs.FileInfo) (string, bool) { return "", false }

// inode is 0: this system tells no inode numbers.
func inode(fs.FileInfo) uint64 { return 0 }

// allocated reports nothing: this system does not tell.
func allocated(fs.FileInfo) (int64, bool) { return 0, false }
