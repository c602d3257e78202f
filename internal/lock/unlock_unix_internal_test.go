//go:build unix

package lock

import (
	"path/filepath"
	"syscall"
	"testing"
)

// A descriptor of the lock file that a process being started holds for a
// moment (forked, not yet exec'd, where its close-on-exec descriptors
// close) must not keep a released lock held: Unlock releases the lock
// itself, not only its own descriptor.
func TestUnlockReleasesTheLockWhateverElseHoldsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.lock")
	l, err := TryLock(path, "first")
	if err != nil {
		t.Fatal(err)
	}
	dup, err := syscall.Dup(int(l.f.Fd())) // what a fork in flight holds
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dup)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := TryLock(path, "second")
	if err != nil {
		t.Fatalf("a released lock is still held: %v", err)
	}
	_ = again.Unlock()
}
