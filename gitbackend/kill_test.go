package gitbackend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// The helper process: when GROVE_HELPER is set, TestHelperProcess runs
// one grove operation in this test binary and is killed by its parent.
// GROVE_HELPER_POINT names the crash point where it stops and waits to be
// killed; without one the parent kills it on a timer. It touches
// GROVE_HELPER_READY when it reaches the point (or starts the operation).

type helperJob struct {
	Op      string // create, checkpoint, restore, hold, destroy, churn
	Repo    string
	Name    string
	Binding []byte
	Target  string
	Point   string
	Ready   string
	Rounds  int
}

func TestHelperProcess(t *testing.T) {
	spec := os.Getenv("GROVE_HELPER")
	if spec == "" {
		return
	}
	var job helperJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ready := func() {
		if err := os.WriteFile(job.Ready, nil, 0o644); err != nil {
			os.Exit(3)
		}
	}
	ctx := context.Background()
	b := gitbackend.New(gitbackend.Options{})
	if job.Point != "" {
		gitbackend.SetCrashHook(b, func(name string) {
			if name == job.Point {
				ready()
				select {} // wait for SIGKILL
			}
		})
	}
	err := func() error {
		switch job.Op {
		case "create":
			ws, err := workspace.Open(ctx, b, job.Repo, nil)
			if err != nil {
				return err
			}
			if job.Point == "" {
				ready()
			}
			_, err = ws.NewHead(job.Name).From("main").Create(ctx)
			return err
		case "churn":
			ready()
			return churn(ctx, b, job.Repo, job.Name, job.Rounds)
		case "torture": // Name is the harness's state dir, Rounds its seed
			ready()
			return torture(ctx, job.Repo, job.Name, job.Rounds)
		}
		bind, err := grove.DecodeBinding(job.Binding)
		if err != nil {
			return err
		}
		h, err := workspace.Reopen(ctx, b, bind, nil)
		if err != nil {
			return err
		}
		if job.Point == "" {
			ready()
		}
		switch job.Op {
		case "checkpoint":
			_, err = h.Checkpoint(ctx, nil)
		case "restore":
			_, err = h.Restore(ctx, grove.Rev(job.Target), nil)
		case "hold":
			select {}
		case "destroy":
			_, err = h.Destroy(ctx, &workspace.DestroyOptions{Discard: true})
		}
		return err
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startHelper runs job in a child process and waits until it is ready.
// It returns the running command; the caller kills or waits for it.
func startHelper(t *testing.T, job helperJob) *exec.Cmd {
	t.Helper()
	job.Ready = filepath.Join(t.TempDir(), "ready")
	spec, err := json.Marshal(job)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GROVE_HELPER="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(job.Ready); err == nil {
			return cmd
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("helper %s never became ready: %s", job.Op, stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// kill SIGKILLs the helper after delay (at once for a crash point).
func kill(t *testing.T, cmd *exec.Cmd, delay time.Duration) {
	t.Helper()
	time.Sleep(delay)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}

// killFiles is how many files the kill tests' repositories have more
// than the fixture's: enough that a kill at 30 ms lands inside git.
const killFiles = 150

// killDelays are the timed kills, besides the named crash points, so that
// some kills land inside a git command grove is running: CI's one (a kill
// at once lands before the helper has opened anything, which the crash
// points cover), or with -grove.allkills four.
var killDelays = []time.Duration{30 * time.Millisecond}

var allKills = flag.Bool("grove.allkills", false, "kill after 0, 3, 10 and 30 ms (CI: 30 ms)")

// killRun is one kill: at a crash point, or after a delay.
type killRun struct {
	point string
	delay time.Duration
}

func (r killRun) String() string { return fmt.Sprintf("%s%v", r.point, r.delay) }

// killRuns is a kill at each point, then one after each of killDelays.
func killRuns(points ...string) []killRun {
	var runs []killRun
	for _, p := range points {
		runs = append(runs, killRun{point: p})
	}
	delays := killDelays
	if *allKills {
		delays = []time.Duration{0, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond}
	}
	for _, d := range delays {
		runs = append(runs, killRun{delay: d})
	}
	return runs
}

func TestKillDuringCreateLeavesAHeadOrNothing(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	for _, r := range killRuns("create:registered") {
		t.Run(r.String(), func(t *testing.T) {
			f := newBigFixture(t, killFiles)
			cmd := startHelper(t, helperJob{Op: "create", Repo: f.repo, Name: "agent", Point: r.point})
			kill(t, cmd, r.delay)

			ws := f.open() // recovers an interrupted create
			h, err := ws.OpenHead(f.ctx, "agent", nil)
			if err == nil {
				// The create finished: the head is whole.
				st, err := h.Status(f.ctx)
				require.NoError(t, err)
				assert.False(t, st.Dirty, "a finished create left a dirty head: %+v", st.Changes)
				require.NoError(t, h.Close())
				return
			}
			require.Equal(t, grove.NotFound, grove.CodeOf(err), "opening the head: %v", err)
			assertNothingLeft(t, f, "agent")
			assert.NoDirExists(t, filepath.Join(filepath.Dir(f.repo), "repo.grove", "agent"))
			// The name is free again and a create succeeds at once.
			ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
			defer cancel()
			h, err = ws.NewHead("agent").From("main").Create(ctx)
			require.NoError(t, err)
			require.NoError(t, h.Close())
		})
	}
}

func TestKillDuringCheckpointLeavesARecoverableHead(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	for _, r := range killRuns("checkpoint:captured", "checkpoint:committed", "checkpoint:recorded", "index:locked") {
		t.Run(r.String(), func(t *testing.T) {
			f := newBigFixture(t, killFiles)
			h := f.head("agent")
			for i := range 50 {
				f.write(h, fmt.Sprintf("work/%d.txt", i), fmt.Sprintf("work %d\n", i))
			}
			f.write(h, "README.md", "edited\n")
			want := diskFiles(t, h.Info().Root)
			bind := h.Binding()
			require.NoError(t, h.Close())
			data, err := bind.Encode()
			require.NoError(t, err)

			cmd := startHelper(t, helperJob{Op: "checkpoint", Binding: data, Point: r.point})
			kill(t, cmd, r.delay)

			h = reopenAfterKill(t, f, bind)
			assert.Equal(t, want, diskFiles(t, h.Info().Root), "the user's files changed")
			checkStatusMatchesGit(t, f, h)
			cp := checkpointAfterKill(t, f, h)
			assert.Equal(t, "edited", f.git(f.repo, "show", string(cp.ID)+":README.md"))
			assert.Equal(t, "work 49", f.git(f.repo, "show", string(cp.ID)+":work/49.txt"))
		})
	}
}

func TestKillDuringRestoreLeavesARecoverableHead(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	for _, r := range killRuns("restore:written", "restore:pruned", "restore:cleaned", "index:locked") {
		t.Run(r.String(), func(t *testing.T) {
			f := newBigFixture(t, killFiles)
			h := f.head("agent")
			// The target: the base with 200 files changed.
			for i := range killFiles * 4 / 5 {
				f.write(h, fmt.Sprintf("gen/%03d/f.txt", i), "target\n")
			}
			target, err := h.Checkpoint(f.ctx, nil)
			require.NoError(t, err)
			_, err = h.Restore(f.ctx, "main", nil)
			require.NoError(t, err)
			// The user's uncommitted work the restore must not lose.
			for i := range 30 {
				f.write(h, fmt.Sprintf("mine/%d.txt", i), fmt.Sprintf("mine %d\n", i))
			}
			f.write(h, "ignored/keep.bin", "ignored\n")
			mine := diskFiles(t, h.Info().Root)
			bind := h.Binding()
			require.NoError(t, h.Close())
			data, err := bind.Encode()
			require.NoError(t, err)

			cmd := startHelper(t, helperJob{Op: "restore", Binding: data, Target: string(target.ID), Point: r.point})
			kill(t, cmd, r.delay)

			h = reopenAfterKill(t, f, bind)
			checkStatusMatchesGit(t, f, h)
			// Every file the user had is in the head or in a checkpoint.
			now := diskFiles(t, h.Info().Root)
			log, err := h.Log(f.ctx, nil)
			require.NoError(t, err)
			for name, content := range mine {
				if now[name] == content {
					continue
				}
				found := false
				for _, cp := range log {
					if out, err := gitUser(f.ctx, f.repo, "show", string(cp.ID)+":"+name); err == nil && out+"\n" == content {
						found = true
						break
					}
				}
				assert.True(t, found, "%s (%q) is neither in the head nor in any checkpoint", name, content)
			}
			assert.Equal(t, "ignored\n", now["ignored/keep.bin"], "the ignored file was touched")
			checkpointAfterKill(t, f, h)
			// Running the restore again converges on the target.
			ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
			defer cancel()
			_, err = h.Restore(ctx, grove.Rev(target.ID), &workspace.RestoreOptions{Discard: true})
			require.NoError(t, err)
			assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"))
			assert.Equal(t, string(target.ID), f.git(h.Info().Root, "rev-parse", "HEAD"))
		})
	}
}

func TestIsolationHoldsAcrossProcessesAndDiesWithTheHolder(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	bind := h.Binding()
	require.NoError(t, h.Close())
	data, err := bind.Encode()
	require.NoError(t, err)
	cmd := startHelper(t, helperJob{Op: "hold", Binding: data})
	_, err = workspace.Reopen(f.ctx, f.ws.Backend(), bind, nil)
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "a second holder in another process: %v", err)
	kill(t, cmd, 0)
	h = reopenAfterKill(t, f, bind)
	require.NoError(t, h.Close())
}

// reopenAfterKill reopens the head through a new backend, as a restarted
// harness would; no lock may make it wait.
func reopenAfterKill(t *testing.T, f *fixture, bind grove.Binding) *workspace.Head {
	t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	h, err := workspace.Reopen(ctx, gitbackend.New(gitbackend.Options{}), bind, nil)
	require.NoError(t, err, "reopening after the kill")
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// checkpointAfterKill takes a checkpoint that must succeed at once and
// leave git status clean.
func checkpointAfterKill(t *testing.T, f *fixture, h *workspace.Head) grove.CheckpointResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	cp, err := h.Checkpoint(ctx, nil)
	require.NoError(t, err, "the first checkpoint after the kill")
	assert.Empty(t, f.git(h.Info().Root, "status", "--porcelain"), "git status after the checkpoint")
	st, err := h.Status(ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty)
	return cp
}

// checkStatusMatchesGit compares grove's status with git's own.
func checkStatusMatchesGit(t *testing.T, f *fixture, h *workspace.Head) {
	t.Helper()
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	out := f.git(h.Info().Root, "status", "--porcelain=v2", "--untracked-files=all", "--no-renames")
	var gitPaths []string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "? "):
			gitPaths = append(gitPaths, line[2:])
		case strings.HasPrefix(line, "1 "):
			gitPaths = append(gitPaths, strings.SplitN(line, " ", 9)[8])
		}
	}
	var ours []string
	for _, c := range st.Changes {
		ours = append(ours, c.Path)
	}
	assert.ElementsMatch(t, gitPaths, ours, "grove's status and git's disagree")
	assert.Equal(t, f.git(h.Info().Root, "rev-parse", "HEAD"), string(st.Commit))
}

// diskFiles reads every regular file under root except .git.
func diskFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	require.NoError(t, err)
	return out
}

// A create killed while git wrote a file leaves that file cut short: the
// next open takes the interrupted head away (the file's content is the
// start of its commit's, nothing of anyone's), but never one whose file
// holds anything else.
func TestARecoveredCreateTakesAFileCutShortButNoOther(t *testing.T) {
	for name, content := range map[string]string{"cut short": "pack", "changed": "someone's edit\n"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			h := f.head("agent")
			root, id := h.Info().Root, h.Info().ID
			require.NoError(t, h.Close())
			require.NoError(t, os.WriteFile(filepath.Join(root, "src", "main.go"), []byte(content), 0o644))
			mfPath := filepath.Join(f.repo, ".git", "grove", "heads", string(id)+".json")
			data, err := os.ReadFile(mfPath)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(mfPath, bytes.Replace(data, []byte(`"state":`), []byte(`"creating":true,"state":`), 1), 0o644))

			f.open() // recovers the interrupted create
			if name == "cut short" {
				assert.NoDirExists(t, root)
				assertNothingLeft(t, f, "agent")
			} else {
				assert.FileExists(t, filepath.Join(root, "src", "main.go"), "a changed file was deleted")
			}
		})
	}
}
