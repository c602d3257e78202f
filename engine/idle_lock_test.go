package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// An idle checkpoint that meets a head's index.lock held by a git command
// outside grove gives up within the backend's bounded lock wait and
// journals checkpoint-failed; closing the session while it waits does not
// wait for it.
func TestAnIdleCheckpointBlockedByAForeignIndexLockGivesUpAndCloseDoesNotWait(t *testing.T) {
	ctx := context.Background()
	gb := gitbackend.New(gitbackend.Options{LockWait: time.Second})
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{gb},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: gitRepo(t)}}})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnIdle, Idle: 20 * time.Millisecond}})
	require.NoError(t, err)
	root := s.Head().Info().Root
	admin, err := githarnessGit(root, "rev-parse", "--absolute-git-dir")
	require.NoError(t, err)
	lockPath := filepath.Join(strings.TrimSpace(admin), "index.lock")
	require.NoError(t, os.WriteFile(lockPath, nil, 0o644))

	require.NoError(t, s.Turn(ctx, func(context.Context) error {
		return s.FS().WriteFile("turn.txt", []byte("work\n"), 0o644)
	}))
	require.Eventually(t, func() bool { return slices.Contains(kinds(t, s), engine.EventCheckpointFailed) },
		30*time.Second, 20*time.Millisecond, "the idle checkpoint never gave up")
	assert.NotContains(t, kinds(t, s), engine.EventCheckpointed)

	// Another idle checkpoint is now waiting on the lock: Close returns at
	// once all the same.
	require.NoError(t, s.Turn(ctx, func(context.Context) error {
		return s.FS().WriteFile("turn.txt", []byte("more\n"), 0o644)
	}))
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	require.NoError(t, s.Close())
	assert.Less(t, time.Since(start), 5*time.Second, "Close waited on the blocked idle checkpoint")
	_, err = os.Stat(lockPath)
	assert.NoError(t, err, "grove removed a lock it did not take")
}
