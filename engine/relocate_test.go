package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// fleetHost is one host of a fleet: its own clone, heads directory,
// backend and engine, sharing the database and the remote.
type fleetHost struct {
	b     *gitbackend.Backend
	e     *engine.Engine
	clone string
}

func newFleetHost(t *testing.T, ctx context.Context, root, name, remote, db string, attempts int) *fleetHost {
	t.Helper()
	clone := filepath.Join(root, name, "project")
	_, err := githarness.Git(ctx, root, "clone", "-q", remote, clone)
	require.NoError(t, err)
	b := gitbackend.New(gitbackend.Options{PushAttempts: attempts})
	e, err := engine.Open(ctx, engine.Options{
		Path: db, LeaseDir: filepath.Join(root, name, "leases"),
		Placement: engine.Placement{PerSession: &engine.PerSession{
			Backend: b, Root: clone, HeadsDir: filepath.Join(root, name, "heads"),
			Remote: &grove.Remote{URL: remote},
			// Marks, beside each head it prepares, that it ran.
			Setup: &grove.Hook{Command: `echo ran > "$GROVE_HEAD_DIR.setup"`},
		}},
		Snapshot: engine.SnapshotPolicy{Trigger: engine.Manual},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return &fleetHost{b: b, e: e, clone: clone}
}

func TestResumeOnAnotherHostWithRelocate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	require.NoError(t, githarness.InitRepo(ctx, seed, files()))
	remote := filepath.Join(root, "remote.git")
	_, err := githarness.Git(ctx, root, "clone", "-q", "--bare", seed, remote)
	require.NoError(t, err)
	db := engine.PostgresDatabase(t)
	a := newFleetHost(t, ctx, root, "a", remote, db, 1)
	b := newFleetHost(t, ctx, root, "b", remote, db, 1)

	s, err := a.e.NewSession(ctx, &engine.SessionOptions{Agent: "worker"})
	require.NoError(t, err)
	id := s.ID()
	dir := s.Head().Info().Root
	require.NoError(t, os.WriteFile(filepath.Join(dir, "work.txt"), []byte("pushed\n"), 0o644))
	cp1, err := s.Checkpoint(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, a.b.WaitPushes(ctx))

	// Live on host a: host b cannot have it, relocated or not.
	_, err = b.e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true, Relocate: true})
	var re *engine.ResumeError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, engine.SessionBusy, re.Kind)

	// A second checkpoint never reaches the remote (it is away), and host
	// a dies, its session left open.
	require.NoError(t, os.Rename(remote, remote+".away"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "work.txt"), []byte("never pushed\n"), 0o644))
	_, err = s.Checkpoint(ctx, nil)
	require.NoError(t, err, "a checkpoint never fails for the remote's sake")
	require.NoError(t, a.b.WaitPushes(ctx))
	require.NoError(t, s.Detach())
	require.NoError(t, os.Rename(remote+".away", remote))
	// Host a's disk is gone with it.
	require.NoError(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "a.gone")))

	// Without Relocate the head stays unavailable.
	_, err = b.e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true})
	require.ErrorAs(t, err, &re)
	assert.Equal(t, engine.HeadUnavailable, re.Kind, "%v", err)

	r, err := b.e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true, Relocate: true})
	require.NoError(t, err)
	rep := r.Resumed()
	assert.True(t, rep.Relocated)
	assert.Equal(t, cp1.ID, rep.Pushed)
	assert.Equal(t, 1, rep.Behind, "one checkpoint never reached the remote")
	newDir := r.Head().Info().Root
	assert.True(t, strings.HasPrefix(newDir, filepath.Join(root, "b")), newDir)
	assert.FileExists(t, newDir+".setup", "the placement's setup ran in the relocated head")
	data, err := os.ReadFile(filepath.Join(newDir, "work.txt"))
	require.NoError(t, err)
	assert.Equal(t, "pushed\n", string(data), "exactly the last pushed checkpoint's files")
	evs, err := b.e.Events(ctx, id)
	require.NoError(t, err)
	var kinds []engine.EventKind
	for _, ev := range evs {
		kinds = append(kinds, ev.Kind)
	}
	require.GreaterOrEqual(t, len(kinds), 2)
	assert.Equal(t, []engine.EventKind{engine.EventRelocated, engine.EventResumed}, kinds[len(kinds)-2:])
	var moved struct {
		Dir, From, Commit string
		Behind            int
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-2].Payload, &moved))
	assert.Equal(t, newDir, moved.Dir)
	assert.Equal(t, dir, moved.From)
	assert.Equal(t, string(cp1.ID), moved.Commit)
	info, err := b.e.SessionInfo(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, cp1.ID, info.LastCheckpoint)

	// It goes on from there, pushing from host b.
	require.NoError(t, os.WriteFile(filepath.Join(newDir, "work.txt"), []byte("on b\n"), 0o644))
	cp3, err := r.Checkpoint(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, b.b.WaitPushes(ctx))
	out, err := githarness.Git(ctx, remote, "rev-parse", "refs/grove/"+string(r.Head().Info().ID)+"/head")
	require.NoError(t, err)
	assert.Equal(t, string(cp3.ID), strings.TrimSpace(out))
	require.NoError(t, r.Detach())

	// The stored binding is the new one: a plain resume on b opens it.
	again, err := b.e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true})
	require.NoError(t, err)
	assert.Equal(t, newDir, again.Head().Info().Root)
	assert.False(t, again.Resumed().Relocated)

	// A head the session destroyed is never brought back from the remote.
	_, err = again.Destroy(ctx, &workspace.DestroyOptions{Discard: true}) // closes the session too
	require.NoError(t, err)
	c := newFleetHost(t, ctx, root, "c", remote, db, 1)
	_, err = c.e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true, Relocate: true})
	require.ErrorAs(t, err, &re)
	assert.Equal(t, engine.HeadUnavailable, re.Kind)
	assert.Equal(t, grove.Destroyed, grove.CodeOf(err), "%v", err)
	_, err = os.Stat(filepath.Join(root, "c", "heads"))
	assert.True(t, os.IsNotExist(err), "nothing was built on host c")
}

// Survivors share a dead host's sessions: each TakeOver takes its share
// (the waiting sessions over the hosts connected), in parallel, and no
// session is taken twice.
func TestSurvivorsShareADeadHostsSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	require.NoError(t, githarness.InitRepo(ctx, seed, files()))
	remote := filepath.Join(root, "remote.git")
	_, err := githarness.Git(ctx, root, "clone", "-q", "--bare", seed, remote)
	require.NoError(t, err)
	db := engine.PostgresDatabase(t)
	dead := newFleetHost(t, ctx, root, "dead", remote, db, 1)
	const n = 6
	ids := map[string]bool{}
	for range n {
		s, err := dead.e.NewSession(ctx, nil)
		require.NoError(t, err)
		ids[s.ID()] = true
		require.NoError(t, dead.b.WaitPushes(ctx))
		require.NoError(t, s.Detach()) // as its host died
	}
	require.NoError(t, dead.e.Close())
	a := newFleetHost(t, ctx, root, "a", remote, db, 1)
	b := newFleetHost(t, ctx, root, "b", remote, db, 1)

	results := make([]engine.TakeOverResult, 2)
	errs := make([]error, 2)
	done := make(chan int)
	for i, h := range []*fleetHost{a, b} {
		go func() {
			results[i], errs[i] = h.e.TakeOver(ctx, &engine.TakeOverOptions{Parallel: 2})
			done <- i
		}()
	}
	<-done
	<-done
	taken := map[string]int{}
	for i, res := range results {
		require.NoError(t, errs[i])
		assert.Empty(t, res.Failed)
		assert.Equal(t, 2, res.Hosts, "the two survivors are connected")
		assert.LessOrEqual(t, len(res.Sessions), n/2, "host %d took more than its share", i)
		for _, s := range res.Sessions {
			taken[s.ID()]++
			assert.True(t, s.Resumed().Relocated)
			assert.Greater(t, s.Generation(), int64(1))
			require.NoError(t, s.Close())
		}
	}
	for id := range taken {
		assert.True(t, ids[id], "a session that was not waiting")
		assert.Equal(t, 1, taken[id], "session %s taken twice", id)
	}
	// What either left (the other took it first, or its share was full)
	// the next look takes.
	for len(taken) < n {
		res, err := a.e.TakeOver(ctx, nil)
		require.NoError(t, err)
		require.NotEmpty(t, res.Sessions, "sessions are waiting and none was taken")
		for _, s := range res.Sessions {
			taken[s.ID()]++
			require.NoError(t, s.Close())
		}
	}
	res, err := b.e.TakeOver(ctx, nil)
	require.NoError(t, err)
	assert.Zero(t, res.Waiting)
}
