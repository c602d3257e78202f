package gitbackend_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// A head with 120 checkpoints: retention keeps exactly the policy's
// newest ones, every restore target, what branches and the caller pin,
// and deletes nothing on a dry run.
func TestRetentionKeepsExactlyWhatThePolicySays(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	f := newFixture(t)
	h := f.head("agent")
	const n = 60
	cps := make([]grove.CheckpointID, 0, n+1)
	for i := range n {
		f.write(h, "count.txt", fmt.Sprintf("%d\n", i))
		cp, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		require.True(t, cp.New)
		cps = append(cps, cp.ID)
	}
	_, err := h.Restore(f.ctx, grove.Rev(cps[19]), nil)
	require.NoError(t, err)
	f.write(h, "after.txt", "after the restore\n")
	last, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	cps = append(cps, last.ID)
	f.git(f.repo, "branch", "keep-me", string(cps[39]))

	want := map[grove.CheckpointID]bool{cps[19]: true, cps[39]: true, cps[49]: true}
	for _, id := range cps[len(cps)-10:] {
		want[id] = true
	}
	policy := &workspace.RetentionPolicy{KeepLast: 10, Keep: []grove.CheckpointID{cps[49]}, DryRun: true}
	check := func(rep grove.RetentionReport) {
		t.Helper()
		require.Len(t, rep.Heads, 1)
		hr := rep.Heads[0]
		assert.Equal(t, "agent", hr.Head)
		assert.Len(t, hr.Kept, len(want))
		for _, id := range hr.Kept {
			assert.True(t, want[id], "%s kept but not by the policy", id)
		}
		assert.Len(t, hr.Deleted, len(cps)-len(want))
		for _, id := range hr.Deleted {
			assert.False(t, want[id], "%s deleted but the policy keeps it", id)
		}
	}
	refs := func() int {
		return len(strings.Fields(f.git(f.repo, "for-each-ref", "--format=%(refname)", "refs/grove/")))
	}

	rep, err := f.ws.Retain(f.ctx, policy)
	require.NoError(t, err)
	assert.True(t, rep.DryRun)
	check(rep)
	assert.Equal(t, len(cps), refs(), "a dry run deletes nothing")

	policy.DryRun = false
	rep, err = f.ws.Retain(f.ctx, policy)
	require.NoError(t, err)
	check(rep)
	assert.Equal(t, len(want), refs())
	log, err := h.Log(f.ctx, nil)
	require.NoError(t, err)
	assert.Len(t, log, len(want))
	assert.Equal(t, last.ID, log[0].ID)
	f.git(f.repo, "fsck", "--no-progress")

	// The head goes on: its restore target still restores, and the next
	// checkpoint is its newest.
	_, err = h.Restore(f.ctx, grove.Rev(cps[19]), nil)
	require.NoError(t, err)
	f.write(h, "later.txt", "later\n")
	next, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	log, err = h.Log(f.ctx, &workspace.LogOptions{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, next.ID, log[0].ID)
}

// KeepWithin keeps what is newer than the age; the newest checkpoint is
// kept whatever its age; a policy that keeps nothing is refused.
func TestRetentionByAge(t *testing.T) {
	t.Parallel() // mostly waiting on git and helper processes
	f := newFixture(t)
	h := f.head("agent")
	var old []grove.CheckpointID
	for i := range 3 {
		f.write(h, "n.txt", fmt.Sprint(i))
		cp, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		old = append(old, cp.ID)
	}
	time.Sleep(2100 * time.Millisecond) // commit times have whole seconds
	f.write(h, "n.txt", "new")
	fresh, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	rep, err := f.ws.Retain(f.ctx, &workspace.RetentionPolicy{KeepWithin: time.Second})
	require.NoError(t, err)
	require.Len(t, rep.Heads, 1)
	assert.Equal(t, []grove.CheckpointID{fresh.ID}, rep.Heads[0].Kept)
	assert.Equal(t, []grove.CheckpointID{old[2], old[1], old[0]}, rep.Heads[0].Deleted)

	rep, err = f.ws.Retain(f.ctx, &workspace.RetentionPolicy{KeepWithin: time.Second})
	require.NoError(t, err)
	assert.Equal(t, []grove.CheckpointID{fresh.ID}, rep.Heads[0].Kept, "the newest is kept, however old")

	for _, p := range []*workspace.RetentionPolicy{nil, {}, {KeepLast: -1}} {
		_, err := f.ws.Retain(f.ctx, p)
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err))
	}
}
