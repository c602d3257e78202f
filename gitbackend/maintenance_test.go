package gitbackend_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
	"github.com/groveworks/grove/workspace"
)

var maintenanceFor = flag.Duration("grove.maintenance", 2*time.Second,
	"how long the concurrent-maintenance stress test runs (longer: -grove.maintenance=2m)")

// maintenanceCommands are what editors, cron jobs and people run on a
// repository while grove works in it, each as the user would (the real
// git, default settings: gc's default prune expiry).
var maintenanceCommands = [][]string{
	{"gc", "--quiet"},
	{"repack", "-a", "-d", "-q"},
	{"maintenance", "run", "--task=gc", "--quiet"},
	{"worktree", "prune"},
	{"fetch", "--prune", "--quiet", "origin"},
	{"pack-refs", "--all", "--prune"},
	{"worktree", "repair"},
}

// Several heads checkpoint, restore and fork while another process loops
// over git's maintenance commands on the same repository. Every operation
// either succeeds or fails with a retryable code (Busy), never Internal;
// every checkpoint grove reported stays readable; git status works in
// every head; git fsck is clean.
func TestOperationsSurviveConcurrentMaintenance(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newBigFixture(t, 300)
	origin := filepath.Join(t.TempDir(), "origin.git")
	f.git(f.repo, "clone", "-q", "--bare", f.repo, origin)
	f.git(f.repo, "remote", "add", "origin", origin)
	// Not the fixture's context: a long run outlives its two minutes.
	ctx, cancel := context.WithTimeout(context.Background(), *maintenanceFor+2*time.Minute)
	defer cancel()

	const heads = 3
	hs := make([]*workspace.Head, heads)
	for i := range hs {
		hs[i] = f.head(fmt.Sprintf("agent-%d", i))
	}

	stop := make(chan struct{})
	var maint sync.WaitGroup
	var maintRuns atomic.Int64
	maint.Add(1)
	go func() {
		defer maint.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			args := maintenanceCommands[i%len(maintenanceCommands)]
			cmd := exec.CommandContext(ctx, "git", append([]string{"-C", f.repo}, args...)...)
			_ = cmd.Run() // a maintenance command may fail for its own reasons (a lock grove holds)
			maintRuns.Add(1)
		}
	}()

	var (
		mu       sync.Mutex
		reported []grove.CheckpointID
		counts   = map[string]int{}
	)
	record := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch code := grove.CodeOf(err); code {
		case grove.OK:
			counts[what]++
		case grove.Busy:
			counts[what+" busy"]++
		default:
			counts[what+" failed"]++
			t.Errorf("%s: %v (code %v): a transient cause must be retried or Busy", what, err, code)
		}
	}
	retries := gitcmd.TransientRetries()
	deadline := time.Now().Add(*maintenanceFor)
	var work sync.WaitGroup
	for i, h := range hs {
		work.Add(1)
		go func() {
			defer work.Done()
			var mine []grove.CheckpointID
			for n := 0; time.Now().Before(deadline); n++ {
				for k := range 5 {
					p := filepath.Join(h.Info().Root, "work", fmt.Sprintf("f%d.txt", k))
					_ = os.MkdirAll(filepath.Dir(p), 0o755)
					_ = os.WriteFile(p, []byte(fmt.Sprintf("head %d round %d file %d\n", i, n, k)), 0o644)
				}
				cp, err := h.Checkpoint(ctx, nil)
				record("checkpoint", err)
				if err == nil {
					mine = append(mine, cp.ID)
					mu.Lock()
					reported = append(reported, cp.ID)
					mu.Unlock()
				}
				switch {
				case n%4 == 3 && len(mine) > 2:
					_, err := h.Restore(ctx, grove.Rev(mine[len(mine)-3]), &workspace.RestoreOptions{Discard: true})
					record("restore", err)
				case n%6 == 5:
					fork, err := h.Fork(ctx, fmt.Sprintf("fork-%d-%d", i, n), nil)
					record("fork", err)
					if err == nil {
						_, err = fork.Destroy(ctx, &workspace.DestroyOptions{Discard: true})
						record("destroy", err)
					}
				}
			}
		}()
	}
	work.Wait()
	close(stop)
	maint.Wait()
	t.Logf("in %v: %v, %d maintenance commands, %d git commands run again after a transient failure",
		*maintenanceFor, counts, maintRuns.Load(), gitcmd.TransientRetries()-retries)
	require.NotZero(t, counts["checkpoint"], "no checkpoint succeeded")

	for _, id := range reported {
		_, err := gitUser(ctx, f.repo, "cat-file", "-e", string(id)+"^{commit}")
		assert.NoError(t, err, "checkpoint %s grove reported is gone", id)
	}
	for _, h := range hs {
		_, err := gitUser(ctx, h.Info().Root, "status", "--porcelain")
		assert.NoError(t, err, "git status in %s", h.Info().Name)
		st, err := h.Status(ctx)
		require.NoError(t, err)
		assert.NotEmpty(t, st.Commit)
	}
	out, err := gitUser(ctx, f.repo, "fsck", "--no-progress", "--no-dangling")
	require.NoError(t, err, "git fsck: %s", out)
	assert.NotContains(t, strings.ToLower(out), "missing")
	list, err := gitUser(ctx, f.repo, "worktree", "list", "--porcelain")
	require.NoError(t, err)
	for _, h := range hs {
		assert.Contains(t, list, h.Info().Root, "git worktree prune and repair kept the live head registered")
	}
}
