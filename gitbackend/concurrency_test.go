package gitbackend_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/workspace"
)

// churn creates, checkpoints, restores and destroys heads named
// <name>-<round> in the repository, rounds times.
func churn(ctx context.Context, b backend.Backend, repo, name string, rounds int) error {
	ws, err := workspace.Open(ctx, b, repo, nil)
	if err != nil {
		return err
	}
	defer ws.Close()
	for i := range rounds {
		h, err := ws.NewHead(fmt.Sprintf("%s-%d", name, i)).From("main").Create(ctx)
		if err != nil {
			return fmt.Errorf("create: %w", err)
		}
		root := h.Info().Root
		for j := range 3 {
			if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(fmt.Sprintf("%s %d %d\n", name, i, j)), 0o644); err != nil {
				return err
			}
			if _, err := h.Checkpoint(ctx, nil); err != nil {
				return fmt.Errorf("checkpoint: %w", err)
			}
		}
		if _, err := h.Restore(ctx, "main", nil); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if _, err := h.Destroy(ctx, nil); err != nil {
			return fmt.Errorf("destroy: %w", err)
		}
	}
	return nil
}

func TestEightGoroutinesChurnOneRepository(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newFixture(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = churn(f.ctx, f.ws.Backend(), f.repo, fmt.Sprintf("g%d", g), 4)
		}()
	}
	wg.Wait()
	for g, err := range errs {
		assert.NoError(t, err, "goroutine %d", g)
	}
	checkRepositoryAfterChurn(t, f, 8*4)
}

func TestFourProcessesChurnOneRepository(t *testing.T) {
	t.Parallel() // mostly waiting on git, helper processes or a clock
	f := newFixture(t)
	var cmds []*exec.Cmd
	for p := range 4 {
		cmds = append(cmds, startHelper(t, helperJob{Op: "churn", Repo: f.repo, Name: fmt.Sprintf("p%d", p), Rounds: 4}))
	}
	for p, cmd := range cmds {
		assert.NoError(t, cmd.Wait(), "process %d: %s", p, cmd.Stderr)
	}
	checkRepositoryAfterChurn(t, f, 4*4)
}

// checkRepositoryAfterChurn checks that every head was destroyed cleanly,
// its checkpoints kept, and the repository is sound.
func checkRepositoryAfterChurn(t *testing.T, f *fixture, heads int) {
	t.Helper()
	f.git(f.repo, "fsck", "--no-progress")
	list := f.git(f.repo, "worktree", "list", "--porcelain")
	assert.Equal(t, 1, strings.Count(list, "worktree "), "worktrees left: %s", list)
	refs := f.git(f.repo, "for-each-ref", "--format=%(refname)", "refs/grove/")
	assert.Equal(t, heads*3, len(strings.Fields(refs)), "checkpoint refs")
	for _, lockName := range []string{"index.lock", "config.lock", "packed-refs.lock"} {
		assert.NoFileExists(t, filepath.Join(f.repo, ".git", lockName))
	}
}

// Status takes no per-head lock: polls run while checkpoints and restores
// of the same head do, and each answers with a consistent status (the race
// detector judges the rest), even when the head's index is damaged and
// every poll needs its own temporary index.
func TestStatusPollsRunDuringWritesOfTheSameHead(t *testing.T) {
	f := newFixture(t)
	h := f.head("polled")
	first, err := h.Checkpoint(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, err := h.Status(f.ctx)
				if err != nil {
					t.Errorf("status during writes: %v", err)
					return
				}
				assert.Len(t, st.Commit, 40)
			}
		})
	}
	for i := range 10 {
		f.write(h, "f.txt", fmt.Sprint(i))
		if _, err := h.Checkpoint(f.ctx, nil); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			if _, err := h.Restore(f.ctx, grove.Rev(first.ID), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A damaged index: every poll rebuilds its own from HEAD.
	gitDir := strings.TrimSpace(f.git(h.Info().Root, "rev-parse", "--absolute-git-dir"))
	if err := os.WriteFile(filepath.Join(gitDir, "index"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := h.Status(f.ctx); err != nil {
			t.Errorf("status of a damaged index: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	ents, err := os.ReadDir(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), "grove-status-index"), "a poll left %s behind", e.Name())
	}
}
