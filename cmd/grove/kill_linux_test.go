package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/githarness"
)

// A grove run killed with SIGKILL takes its command with it: the command
// does not go on writing in the head that the next run takes over.
func TestAKilledRunTakesItsCommandWithIt(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{"a.txt": {Data: []byte("a\n")}}))
	home := filepath.Join(root, "home")
	dir, err := grove(t, repo, home, "new", "h")
	require.NoError(t, err)
	c := exec.Command(groveBin, "run", "h", "--", "sh", "-c", `echo $$ > pid; while true; do sleep 0.05; done`)
	c.Dir = repo
	c.Env = append(os.Environ(), "GROVE_HOME="+home)
	require.NoError(t, c.Start())
	var pid int
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(dir, "pid"))
		if s := strings.TrimSpace(string(data)); s != "" {
			_, err := os.Stat("/proc/" + s)
			require.NoError(t, err)
			pid, err = strconv.Atoi(s)
			require.NoError(t, err)
		}
		require.True(t, time.Now().Before(deadline), "the command never started")
	}
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
