package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A grove run killed with SIGKILL takes its command with it: the command
// does not go on writing in the head that the next run takes over.
func TestAKilledRunTakesItsCommandWithIt(t *testing.T) {
	repo, home, dir := oneHead(t)
	// (The command's PID is its own namespace's: its heartbeat says
	// whether it still runs.)
	c := startRun(t, repo, home, dir, `echo > started; while true; do date +%s%N > beat; sleep 0.05; done`)
	beat := func() string { data, _ := os.ReadFile(filepath.Join(dir, "beat")); return string(data) }
	for deadline := time.Now().Add(10 * time.Second); beat() == ""; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the command never beat")
	}
	require.NoError(t, c.Process.Kill())
	_ = c.Wait()
	time.Sleep(300 * time.Millisecond)
	last := beat()
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, last, beat(), "the command outlived the killed grove run")
	_, err := runGrove(t, repo, home, "run", "h", "--", "true")
	require.NoError(t, err, "the next run takes the head over")
}
