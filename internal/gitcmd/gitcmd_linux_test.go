// On Linux the processes a test started are found through /proc, and git
// dies with a killed grove process (Pdeathsig): these tests run only there.

package gitcmd_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
)

// processAlive reports whether a live process's command line contains
// marker.
func processAlive(t *testing.T, marker string) bool {
	t.Helper()
	return len(pids(marker, "")) > 0
}

func TestCancellationKillsGitAndEverythingItStarted(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	marker := "3" + strconv.Itoa(os.Getpid()) + ".25"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"-c", "alias.hang=!sleep " + marker, "hang"}})
		done <- err
	}()
	require.Eventually(t, func() bool { return processAlive(t, marker) }, 10*time.Second, 10*time.Millisecond, "the child never started")
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, grove.Canceled, grove.CodeOf(err))
	require.Eventually(t, func() bool { return !processAlive(t, marker) }, 10*time.Second, 10*time.Millisecond,
		"the grandchild survived the cancellation")
}

// gitAlive reports whether a git process whose command line contains marker
// is alive.
func gitAlive(t *testing.T, marker string) bool {
	t.Helper()
	return len(pids(marker, "git")) > 0
}

// pids lists live processes whose command line contains marker and whose
// program's base name is prog ("" for any).
func pids(marker, prog string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(data, []byte(marker)) {
			continue
		}
		argv0, _, _ := bytes.Cut(data, []byte{0})
		if prog != "" && filepath.Base(string(argv0)) != prog {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue // a zombie is dead; its parent has not reaped it yet
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		out = append(out, pid)
	}
	return out
}

func TestGitDiesWithAKilledGroveProcess(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	mark := "7" + strconv.Itoa(os.Getpid()) + ".5"
	t.Cleanup(func() { // the orphaned sleep
		for _, pid := range pids(mark, "") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir, "GITCMD_TEST_MARK="+mark)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 6)
	_, err = io.ReadFull(stdout, buf)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(pids(mark, "sleep")) > 0 }, 10*time.Second, 10*time.Millisecond, "git's child never started")
	require.True(t, gitAlive(t, mark), "git is not running")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return !gitAlive(t, mark) }, 10*time.Second, 10*time.Millisecond,
		"git outlived the grove process that started it")
}

// A Finish command outlives a killed grove process and ends on its own: an
// update-ref --stdin whose grove died with a prepared transaction sees its
// input end, aborts, and leaves no ref lock behind (killed with grove, it
// would leave refs/heads/held.lock for good).
func TestAFinishingTransactionLeavesNoLockWhenGroveIsKilled(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), refsHelperEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 6)
	_, err = io.ReadFull(stdout, buf)
	require.NoError(t, err)
	require.Equal(t, "ready\n", string(buf))
	lock := filepath.Join(dir, ".git", "refs", "heads", "held.lock")
	require.FileExists(t, lock, "the transaction holds its ref's lock")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { _, err := os.Lstat(lock); return os.IsNotExist(err) }, 10*time.Second, 10*time.Millisecond,
		"the ref lock outlived the transaction's grove")
	_, err = os.Lstat(filepath.Join(dir, ".git", "refs", "heads", "held"))
	assert.True(t, os.IsNotExist(err), "the aborted transaction moved nothing")
}
