//go:build !linux && !darwin

package headcopy

import (
	"errors"
	"os"
)

// Probe reports NoCoW: no tree is cloned here.
func Probe(string) CoW { return NoCoW }

// MakeTree makes the empty directory path.
func MakeTree(path string, _ CoW) error { return os.Mkdir(path, 0o755) }

// SnapshotTree is not supported here.
func SnapshotTree(src, dst string) error {
	return errors.New("headcopy: no snapshots on this system")
}
