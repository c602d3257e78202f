package gitbackend_test

// Heads that travel together (transport.Client.Push) each keep their own
// fate: an agent without a sandbox writes its own head's manifest, push
// record and locks, and none of it may keep another head's push from
// landing.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/workspace"
)

// batchOfThree sets up host a with one push slot and one push attempt, a
// pre-receive hook that can hold a push, and heads g (the holder), evil
// (the attacker's) and x (an innocent head), all pushed once.
func batchOfThree(t *testing.T) (f *fleet, a *host, gate string, heads map[string]*workspace.Head) {
	f = newFleet(t)
	a = f.host("a", gitbackend.Options{PushAttempts: 1})
	gitbackend.SetPushSlots(a.b, 1)
	gate = t.TempDir()
	hook := "#!/bin/sh\ncat >/dev/null\n" +
		"if [ -e " + gate + "/block ]; then\n  rm " + gate + "/block; touch " + gate + "/entered\n" +
		"  while [ ! -e " + gate + "/go ]; do sleep 0.01; done; rm " + gate + "/go\nfi\nexit 0\n"
	require.NoError(t, os.WriteFile(filepath.Join(f.remote, "hooks", "pre-receive"), []byte(hook), 0o755))
	heads = map[string]*workspace.Head{}
	for _, name := range []string{"g", "evil", "x"} {
		h, err := a.ws.NewHead(name).From("main").Create(f.ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		heads[name] = h
	}
	a.wait()
	return f, a, gate, heads
}

// holdRemote checkpoints g with content and returns once its push is held
// in the remote's pre-receive hook (gate's "block" asks the hook to hold
// it; the caller writes gate's "go" to let it go).
func holdRemote(t *testing.T, f *fleet, gate string, g *workspace.Head, content string) {
	require.NoError(t, os.WriteFile(filepath.Join(gate, "block"), nil, 0o644))
	writeFile(t, g, "work.txt", content)
	_, err := g.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(gate, "entered")); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "g's push never reached the remote's hook")
	}
	require.NoError(t, os.Remove(filepath.Join(gate, "entered")))
}

// batchRound holds the remote in g's push while evil and then x
// checkpoint (so both wait for the one slot, and travel in one batch),
// then lets the remote go; it returns x's checkpoint. The caller waits
// for the pushes.
func batchRound(t *testing.T, f *fleet, a *host, gate string, heads map[string]*workspace.Head) string {
	holdRemote(t, f, gate, heads["g"], "g")
	writeFile(t, heads["evil"], "work.txt", "evil")
	_, err := heads["evil"].Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	writeFile(t, heads["x"], "work.txt", "x")
	cp, err := heads["x"].Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	for deadline := time.Now().Add(time.Minute); gitbackend.QueuedPushes(a.b) < 2; time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "evil's and x's pushes never waited for the slot")
	}
	require.NoError(t, os.WriteFile(filepath.Join(gate, "go"), nil, 0o644))
	return string(cp.ID)
}

func forgePushed(t *testing.T, a *host, id grove.HeadID, key string, value any) {
	file := filepath.Join(a.clone, ".git", "grove", "heads", string(id)+".pushed")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(data, &rec))
	rec[key] = value
	data, _ = json.Marshal(rec)
	require.NoError(t, os.WriteFile(file, data, 0o644))
}

// forgeBranch rewrites head id's manifest to name branch, as its agent
// can.
func forgeBranch(t *testing.T, a *host, id grove.HeadID, branch string) {
	file := filepath.Join(a.clone, ".git", "grove", "heads", string(id)+".json")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	old := `"branch": "grove/evil"`
	require.Contains(t, string(data), old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), old, `"branch": "`+branch+`"`, 1)), 0o644))
}

func assertXLanded(t *testing.T, f *fleet, a *host, heads map[string]*workspace.Head, cp, why string) {
	x := heads["x"].Info().ID
	st, err := a.b.Pushed(f.ctx, a.clone, x, f.remote)
	require.NoError(t, err)
	if len(st.Error) > 400 {
		st.Error = st.Error[:200] + " ... " + st.Error[len(st.Error)-200:]
	}
	assert.Equal(t, cp, f.remoteRef("refs/grove/"+string(x)+"/head"), why)
	assert.Empty(t, st.Error, why)
}

// An agent writes its own head's push record with an owner that is not
// an object name: git refuses the whole push ("cannot parse expected
// object name"); x, pushed alone, lands.
func TestAttackAForgedPushRecordCannotFailAnotherHeadsPush(t *testing.T) {
	f, a, gate, heads := batchOfThree(t)
	forgePushed(t, a, heads["evil"].Info().ID, "owner", "zzz")
	cp := batchRound(t, f, a, gate, heads)
	a.wait()
	assertXLanded(t, f, a, heads, cp, "another head's forged push record failed x's batch")
}

// An agent names another head's branch in its own manifest: one push of
// both would send two commits to refs/heads/grove/x, which git refuses;
// x, pushed alone, lands.
func TestAttackAForgedBranchCannotFailAnotherHeadsPush(t *testing.T) {
	f, a, gate, heads := batchOfThree(t)
	forgeBranch(t, a, heads["evil"].Info().ID, "grove/x")
	cp := batchRound(t, f, a, gate, heads)
	a.wait()
	assertXLanded(t, f, a, heads, cp, "another head's forged branch failed x's batch")
}

// An agent writes a branch longer than one exec argument may be
// (MAX_ARG_STRLEN, 128 KiB) into its own head's manifest: the batch's
// for-each-ref cannot start; x, pushed alone, lands.
func TestAttackAnOverlongBranchCannotFailAnotherHeadsPush(t *testing.T) {
	f, a, gate, heads := batchOfThree(t)
	forgeBranch(t, a, heads["evil"].Info().ID, "grove/"+strings.Repeat("a", 200_000))
	cp := batchRound(t, f, a, gate, heads)
	a.wait()
	assertXLanded(t, f, a, heads, cp, "another head's forged branch (too long for an argument) failed x's batch")
}

// An agent holds its own head's push lock (flock on
// .git/grove/locks/<id>.push): the batch tries each head's lock without
// waiting, so x lands at once; the agent's head waits for its lock alone.
func TestAttackAHeldPushLockCannotStallAnotherHeadsPush(t *testing.T) {
	f, a, gate, heads := batchOfThree(t)
	l, err := lock.Acquire(f.ctx, filepath.Join(a.clone, ".git", "grove", "locks", string(heads["evil"].Info().ID)+".push"), "the attacker")
	require.NoError(t, err)
	cp := batchRound(t, f, a, gate, heads)
	x := "refs/grove/" + string(heads["x"].Info().ID) + "/head"
	for deadline := time.Now().Add(30 * time.Second); f.remoteRef(x) != cp; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "x's push waits for another head's push lock")
	}
	require.NoError(t, l.Unlock())
	a.wait()
	assert.Equal(t, cp, f.remoteRef(x))
}
