package gitbackend_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/githarness"
)

// updateRefHelpers returns the PIDs of this process's git update-ref
// --stdin children.
func updateRefHelpers(t *testing.T) []int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	var out []int
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "update-ref\x00-m\x00grove\x00--stdin") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(filepath.Base(p))
			out = append(out, pid)
		}
	}
	return out
}

// The repository's long-lived git update-ref dies (killed by someone, or
// with the thread that started it): the next checkpoint starts another and
// records its change; closing the workspace ends the helper.
func TestCheckpointSurvivesItsRefHelperDying(t *testing.T) {
	f := newFixture(t)
	h := f.head("a")
	f.write(h, "one.txt", "1")
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	pids := updateRefHelpers(t)
	require.Len(t, pids, 1, "one helper runs after a checkpoint")
	require.NoError(t, syscall.Kill(pids[0], syscall.SIGKILL))
	require.Eventually(t, func() bool { return len(updateRefHelpers(t)) == 0 }, 5*time.Second, 10*time.Millisecond)
	f.write(h, "two.txt", "2")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	require.True(t, cp.New)
	got, err := githarness.Git(context.Background(), f.repo, "rev-parse", "refs/heads/grove/a")
	require.NoError(t, err)
	require.Equal(t, string(cp.ID), got)
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	require.Len(t, log, 2)
	require.Equal(t, cp.ID, log[0].ID)
	require.NoError(t, f.ws.Close())
	require.Eventually(t, func() bool { return len(updateRefHelpers(t)) == 0 }, 5*time.Second, 10*time.Millisecond, "the helper ends with the workspace")
}
