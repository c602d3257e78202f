package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/githarness"
)

// grove runs the built binary in dir and returns its trimmed stdout.
func runGrove(t *testing.T, dir, home string, args ...string) (string, error) {
	t.Helper()
	c := exec.Command(groveBin, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GROVE_HOME="+home)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	if err != nil {
		err = fmt.Errorf("grove %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), err
}

// oneHead makes a repository with one file and a head "h" of it, and
// returns the repository, $GROVE_HOME and the head's directory.
func oneHead(t *testing.T) (repo, home, dir string) {
	t.Helper()
	root := t.TempDir()
	repo, home = filepath.Join(root, "repo"), filepath.Join(root, "home")
	require.NoError(t, githarness.InitRepo(context.Background(), repo, fstest.MapFS{"a.txt": {Data: []byte("a\n")}}))
	dir, err := runGrove(t, repo, home, "new", "h")
	require.NoError(t, err)
	return repo, home, dir
}

// startRun starts grove run h -- sh -c script, in the background, and
// waits until the file the script writes first, started, is in the head.
func startRun(t *testing.T, repo, home, dir, script string) *exec.Cmd {
	t.Helper()
	c := exec.Command(groveBin, "run", "h", "--", "sh", "-c", script)
	c.Dir = repo
	c.Env = append(os.Environ(), "GROVE_HOME="+home)
	require.NoError(t, c.Start())
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			return c
		}
		require.True(t, time.Now().Before(deadline), "the command never started")
	}
}

// A grove checkpoint killed with SIGKILL at any point leaves the head
// working: the next checkpoint succeeds and is complete (it holds every
// file of the head, git status is clean), and the repository is sound.
func TestACheckpointKilledMidwayLeavesTheNextComplete(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	files := fstest.MapFS{".gitignore": {Data: []byte("node_modules/\n")}}
	for i := range 2000 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%40, i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("file %d\n", i))}
	}
	require.NoError(t, githarness.InitRepo(ctx, repo, files))
	home := filepath.Join(root, "home")
	dir, err := runGrove(t, repo, home, "new", "big")
	require.NoError(t, err)

	// How long one checkpoint of this much change takes, to kill within it.
	touch := func(round int) {
		for i := range 2000 {
			if i%3 == round%3 {
				p := filepath.Join(dir, fmt.Sprintf("d%02d/f%04d.txt", i%40, i))
				require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("round %d file %d\n", round, i)), 0o644))
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("new-%d.txt", round)), []byte("new\n"), 0o644))
	}
	touch(0)
	start := time.Now()
	_, err = runGrove(t, repo, home, "checkpoint", "big")
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("one checkpoint takes %v", took)

	const rounds = 12
	interrupted := 0
	var last string
	for round := 1; round <= rounds; round++ {
		touch(round)
		c := exec.Command(groveBin, "checkpoint", "big", "-m", fmt.Sprintf("round %d", round))
		c.Dir = repo
		c.Env = append(os.Environ(), "GROVE_HOME="+home)
		require.NoError(t, c.Start())
		time.Sleep(took * time.Duration(round) / rounds)
		_ = c.Process.Kill()
		if err := c.Wait(); err != nil {
			interrupted++
		}

		cp, err := runGrove(t, repo, home, "checkpoint", "big", "-m", fmt.Sprintf("after round %d", round))
		require.NoError(t, err, "round %d: the checkpoint after a kill", round)
		last = cp
		status, err := githarness.Git(ctx, dir, "status", "--porcelain", "--untracked-files=all")
		require.NoError(t, err)
		assert.Empty(t, status, "round %d: the head is clean after the checkpoint", round)
		// The checkpoint holds the files as they are on disk.
		for _, name := range []string{fmt.Sprintf("new-%d.txt", round), fmt.Sprintf("d%02d/f%04d.txt", round%40, round)} {
			want, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			got, err := githarness.Git(ctx, dir, "show", cp+":"+name)
			require.NoError(t, err, "round %d: %s in checkpoint %s", round, name, cp)
			assert.Equal(t, strings.TrimSpace(string(want)), strings.TrimSpace(got), "round %d: %s", round, name)
		}
	}
	out, err := githarness.Git(ctx, repo, "fsck", "--no-progress", "--no-dangling")
	require.NoError(t, err, "git fsck: %s", out)
	log, err := runGrove(t, repo, home, "log", "big", "-n", "1")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(log, last), "the last checkpoint is the newest in the log: %s", log)
	t.Logf("%d of %d checkpoints were killed before they finished", interrupted, rounds)
	assert.Positive(t, interrupted, "no kill landed inside a checkpoint")
}

// An interrupted grove run passes the interrupt to its command, checkpoints
// what the command did, and exits with the command's status.
func TestAnInterruptedRunCheckpointsAndExitsAsItsCommand(t *testing.T) {
	ctx := context.Background()
	repo, home, dir := oneHead(t)
	c := startRun(t, repo, home, dir, `trap 'echo bye > bye.txt; exit 7' INT; echo > started; while true; do sleep 0.05; done`)
	require.NoError(t, c.Process.Signal(os.Interrupt))
	err := c.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 7, exit.ExitCode(), "grove exits with its command's status")
	show, err := githarness.Git(ctx, dir, "show", "--stat", "--format=%s", "HEAD")
	require.NoError(t, err)
	assert.Contains(t, show, "bye.txt", "what the command did after the interrupt is checkpointed")
	assert.Contains(t, show, "grove run: sh -c")
}
