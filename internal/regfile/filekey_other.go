//go:build !unix

package regfile

import "io/fs"

// FileKey names a file by its identity where the system tells it; here it
// does not, and Status reads the head's index itself.
func FileKey(fs.FileInfo) (string, bool) { return "", false }

// Inode is 0: this system tells no inode numbers.
func Inode(fs.FileInfo) uint64 { return 0 }

// Allocated reports nothing: this system does not tell.
func Allocated(fs.FileInfo) (int64, bool) { return 0, false }

// Links is 1: this system does not tell.
func Links(fs.FileInfo) uint64 { return 1 }
