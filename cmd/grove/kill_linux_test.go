package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A grove run killed with SIGKILL takes its command with it: the command
// does not go on writing in the head that the next run takes over.
func TestAKilledRunTakesItsCommandWithIt(t *testing.T) {
	repo, home, dir := oneHead(t)
	c := startRun(t, repo, home, dir, `echo $$ > pid; echo > started; while true; do sleep 0.05; done`)
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	require.NoError(t, err, "the command runs")
	require.NoError(t, c.Process.Kill())
	_ = c.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil || strings.Contains(string(stat), ") Z ") {
			break // gone, or a zombie no one reaped yet
		}
		require.True(t, time.Now().Before(deadline), "the command outlived the killed grove run")
	}
	_, err = grove(t, repo, home, "run", "h", "--", "true")
	require.NoError(t, err, "the next run takes the head over")
}
