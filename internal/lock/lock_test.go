package lock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/lock"
)

const helperEnv = "LOCK_TEST_HOLD"

// TestMain lets the test binary act as another process that takes a lock,
// says so, and holds it until it is killed.
func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		if _, err := lock.TryLock(path, "helper"); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("held")
		time.Sleep(time.Hour) // until the test kills this process
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTwoHoldersConflictWithinOneProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "head.lock")
	l, err := lock.TryLock(path, "checkpoint")
	require.NoError(t, err)
	_, err = lock.TryLock(path, "restore")
	require.Equal(t, grove.Busy, grove.CodeOf(err), "%v", err)
	assert.ErrorContains(t, err, fmt.Sprintf("held by pid %d", os.Getpid()))
	assert.ErrorContains(t, err, "(checkpoint)")
	assert.True(t, lock.Held(path))

	o, ok := lock.ReadOwner(path)
	require.True(t, ok)
	assert.Equal(t, os.Getpid(), o.PID)
	assert.Equal(t, "checkpoint", o.Purpose)

	require.NoError(t, l.Unlock())
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(l.Unlock()), "a second Unlock succeeded")
	assert.False(t, lock.Held(path))
	l2, err := lock.TryLock(path, "restore")
	require.NoError(t, err)
	require.NoError(t, l2.Unlock())
}

func TestAcquireWaitsForTheHolderAndHonoursItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repo.lock")
	l, err := lock.TryLock(path, "first")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = lock.Acquire(ctx, path, "second")
	assert.Equal(t, grove.Canceled, grove.CodeOf(err))
	assert.True(t, errors.Is(err, context.DeadlineExceeded))

	got := make(chan error, 1)
	go func() {
		l2, err := lock.Acquire(context.Background(), path, "second")
		if err == nil {
			err = l2.Unlock()
		}
		got <- err
	}()
	require.NoError(t, l.Unlock())
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not get the lock after its holder released it")
	}
}

func TestTheLockIsMutuallyExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "repo.lock")
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				l, err := lock.Acquire(context.Background(), path, "race")
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				inside.Add(-1)
				assert.NoError(t, l.Unlock())
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), maxInside.Load(), "two holders were inside the lock at once")
}

func TestALockOfAKilledProcessIsReleasedByTheKernel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "head.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)

	_, err = lock.TryLock(path, "mine")
	require.Equal(t, grove.Busy, grove.CodeOf(err))
	assert.ErrorContains(t, err, fmt.Sprintf("held by pid %d", cmd.Process.Pid))

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := lock.Acquire(ctx, path, "mine")
	require.NoError(t, err, "the lock of a killed process was not released")
	o, ok := lock.ReadOwner(path)
	require.True(t, ok)
	assert.Equal(t, os.Getpid(), o.PID, "the new holder's record replaced the dead one's")
	require.NoError(t, l.Unlock())
}

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

func recordOwner(t *testing.T, path string, pid int) {
	t.Helper()
	host, _ := os.Hostname()
	data := fmt.Sprintf(`{"pid":%d,"host":%q,"purpose":"test","since":"2026-01-01T00:00:00Z"}`, pid, host)
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// A lock whose recorded holder is dead but whose descriptor is still open
// somewhere (a child forked by the dead holder, about to exec) is waited
// for briefly instead of being reported Busy.
func TestLockOfADeadHolderIsWaitedForBriefly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := lock.TryLock(path, "stand-in for the dead holder's last descriptor")
	require.NoError(t, err)
	recordOwner(t, path, deadPID(t))
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = held.Unlock()
	}()
	l, err := lock.TryLock(path, "next")
	require.NoError(t, err, "the lock of a dead holder was not recovered")
	require.NoError(t, l.Unlock())
}

// A live holder's lock is Busy, naming the holder.
func TestLockOfALiveHolderIsBusyAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	held, err := lock.TryLock(path, "live")
	require.NoError(t, err)
	defer held.Unlock()
	_, err = lock.TryLock(path, "next")
	assert.Equal(t, grove.Busy, grove.CodeOf(err))
	assert.Contains(t, err.Error(), "live", "Busy names the holder")
}

// Something else than a lock file at a lock's path — a symlink to a file
// outside, a directory, a FIFO — is replaced, never followed, written
// through or blocked on.
func TestALockPathHoldingSomethingElseIsReplacedNeverFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(outside, []byte("keep me\n"), 0o644))
	plant := map[string]func(p string) error{
		"symlink":   func(p string) error { return os.Symlink(outside, p) },
		"directory": func(p string) error { return os.MkdirAll(filepath.Join(p, "sub"), 0o755) },
	}
	if mkfifo != nil {
		plant["fifo"] = mkfifo
	}
	for name, make := range plant {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name+".lock")
			require.NoError(t, make(p))
			l, err := lock.TryLock(p, "test")
			require.NoError(t, err)
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "the lock file is a regular file now")
			require.NoError(t, l.Unlock())
			data, err := os.ReadFile(outside)
			require.NoError(t, err)
			assert.Equal(t, "keep me\n", string(data), "the lock wrote through a symlink")
		})
	}
}

// A clean Unlock erases the holder's record; a record left in a free lock
// file names a holder that died, which Dead reports (changing nothing)
// and Clear erases. A held lock is never reported.
func TestDeadHoldersAreToldFromCleanReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := lock.TryLock(path, "clean")
	require.NoError(t, err)
	require.NoError(t, l.Unlock())
	_, ok := lock.ReadOwner(path)
	assert.False(t, ok, "a clean release leaves no record")
	_, dead := lock.Dead(path)
	assert.False(t, dead)

	pid := deadPID(t)
	recordOwner(t, path, pid)
	o, dead := lock.Dead(path)
	require.True(t, dead)
	assert.Equal(t, pid, o.PID)
	_, dead = lock.Dead(path)
	assert.True(t, dead, "Dead changes nothing")
	require.NoError(t, lock.Clear(path))
	_, dead = lock.Dead(path)
	assert.False(t, dead)

	held, err := lock.TryLock(path, "held")
	require.NoError(t, err)
	defer held.Unlock()
	recordOwner(t, path, pid)
	_, dead = lock.Dead(path)
	assert.False(t, dead, "a held lock is not a dead holder's")
	assert.Equal(t, grove.Busy, grove.CodeOf(lock.Clear(path)))
}

func TestSharedKeepsAValueOnlyWhileHeld(t *testing.T) {
	var s lock.Shared[string, int]
	a, releaseA := s.Acquire("k")
	b, releaseB := s.Acquire("k")
	require.Same(t, a, b, "holders of one key share one value")
	*a = 7
	releaseA()
	releaseA() // a second release is a no-op
	assert.Equal(t, 1, s.Len())
	releaseB()
	assert.Equal(t, 0, s.Len(), "a value nobody holds is dropped")
	c, releaseC := s.Acquire("k")
	defer releaseC()
	assert.Equal(t, 0, *c)
}

// An agent that replaces a held lock file with a directory (deleting it,
// or renaming it away) must not give its lock a second holder: the lock
// stays Busy while the displaced file is held, and the directory is
// replaced once it no longer is.
func TestALockFileReplacedByADirectoryHasOneHolder(t *testing.T) {
	for name, displace := range map[string]func(p string) error{
		"deleted": os.Remove,
		"renamed": func(p string) error { return os.Rename(p, filepath.Join(filepath.Dir(filepath.Dir(p)), "elsewhere")) },
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "locks", "repo.lock")
			a, err := lock.TryLock(p, "first")
			require.NoError(t, err)
			require.NoError(t, displace(p))
			require.NoError(t, os.Mkdir(p, 0o755))
			_, err = lock.TryLock(p, "second")
			assert.Equal(t, grove.Busy, grove.CodeOf(err), "a second holder: %v", err)
			require.NoError(t, a.Unlock())
			b, err := lock.TryLock(p, "after")
			require.NoError(t, err, "once the displaced lock is free, the directory is replaced")
			require.NoError(t, b.Unlock())
		})
	}
}

// BenchmarkAcquireHandOff measures a lock handed between goroutines of
// one process that each hold it briefly, as a host's heads take the
// repository lock for their ref updates: a release wakes the next
// waiter at once instead of at its next look.
func BenchmarkAcquireHandOff(b *testing.B) {
	path := filepath.Join(b.TempDir(), "repo.lock")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := lock.Acquire(context.Background(), path, "bench")
			if err != nil {
				b.Error(err)
				return
			}
			time.Sleep(100 * time.Microsecond)
			_ = l.Unlock()
		}
	})
}
