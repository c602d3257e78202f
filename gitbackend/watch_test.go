package gitbackend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// An agent without a sandbox plants, in the shared git dir, what the
// user's own git runs later: a hook, an fsmonitor, an alias; a '*' in
// info/exclude; a moved main and a tag of its own. The watch of its head
// sees each; Reconcile reports each as FindingTampered and its fix puts
// everything back, and the user's git then runs none of it.
func TestAWatchSeesWhatAnAgentPlantsAndReconcilePutsItBack(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	other := f.head("other")
	common := commonOf(f)
	mainBefore := f.git(f.repo, "rev-parse", "main")
	configBefore, err := os.ReadFile(filepath.Join(common, "config"))
	require.NoError(t, err)
	require.NoError(t, h.Watch(f.ctx))
	none, err := h.Tampered(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, none, "a head's own checkpoints and another head's are no tampering")

	// What the agent does, from its head, with git and a shell.
	root := h.Info().Root
	f.write(h, "x.txt", "x\n")
	_, err = h.Checkpoint(f.ctx, nil) // its own branch moves: not tampering
	require.NoError(t, err)
	f.write(other, "y.txt", "y\n")
	_, err = other.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	pwned := filepath.Join(t.TempDir(), "pwned")
	require.NoError(t, os.WriteFile(filepath.Join(common, "hooks", "post-checkout"), []byte("#!/bin/sh\ntouch "+pwned+"\n"), 0o755))
	f.git(root, "config", "core.fsmonitor", "touch "+pwned+" #")
	f.git(root, "config", "alias.st", "!touch "+pwned)
	require.NoError(t, os.WriteFile(filepath.Join(common, "info", "exclude"), []byte("*\n"), 0o644))
	evil, err := githarness.Git(f.ctx, root, "commit-tree", "-m", "evil", mainBefore+"^{tree}", "-p", mainBefore)
	require.NoError(t, err)
	f.git(root, "update-ref", "refs/heads/main", evil)
	f.git(root, "tag", "agent-tag")

	got, err := h.Tampered(f.ctx)
	require.NoError(t, err)
	var names []string
	for _, c := range got {
		names = append(names, c.Kind+" "+c.Name)
	}
	joined := strings.Join(names, "\n")
	for _, want := range []string{"hook hooks/post-checkout", "core.fsmonitor", "alias.st", "info info/exclude", "ref refs/heads/main", "ref refs/tags/agent-tag"} {
		assert.Contains(t, joined, want)
	}
	assert.NotContains(t, joined, "grove/agent")
	assert.NotContains(t, joined, "grove/other")

	// The session ends: the baseline stays for doctor, which fixes it all.
	ended, err := h.EndWatch(f.ctx)
	require.NoError(t, err)
	assert.Len(t, ended, len(got))
	rep, err := f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	tampered := 0
	for _, fd := range rep.Findings {
		if fd.Kind == grove.FindingTampered {
			tampered++
			assert.True(t, fd.Fixed, "%+v", fd)
		}
	}
	assert.Equal(t, len(got), tampered)
	assert.Equal(t, mainBefore, f.git(f.repo, "rev-parse", "main"))
	configAfter, err := os.ReadFile(filepath.Join(common, "config"))
	require.NoError(t, err)
	assert.Equal(t, string(configBefore), string(configAfter))
	assert.NoFileExists(t, filepath.Join(common, "hooks", "post-checkout"))
	f.git(f.repo, "status")
	f.git(f.repo, "checkout", "-q", "-b", "after")
	assert.NoFileExists(t, pwned, "the user's git ran what the agent planted")
	assert.NotContains(t, f.git(f.repo, "tag"), "agent-tag")
	again, err := h.Tampered(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, again, "the ended watch is forgotten once fixed: the user's own changes are theirs")
}

// A head's branch moved by git outside grove (another head's agent,
// without a sandbox) is not pushed: the remote gets the head's newest
// checkpoint instead.
func TestABranchMovedOutsideGroveIsNotPushed(t *testing.T) {
	f := newFleet(t)
	a := f.host("a")
	victim, err := a.ws.NewHead("victim").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer victim.Close()
	writeFile(t, victim, "work.txt", "the victim's work\n")
	cp, err := victim.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	a.wait()
	id := victim.Info().ID
	require.Equal(t, string(cp.ID), f.remoteRef("refs/grove/"+string(id)+"/head"))

	evil, err := githarness.Git(f.ctx, a.clone, "commit-tree", "-m", "evil", string(cp.ID)+"^{tree}", "-p", string(cp.ID))
	require.NoError(t, err)
	_, err = githarness.Git(f.ctx, a.clone, "update-ref", "refs/heads/"+victim.Info().Branch, strings.TrimSpace(evil))
	require.NoError(t, err)
	// The next process to open the workspace pushes what the remote may
	// lag behind.
	b := gitbackend.New(gitbackend.Options{PushAttempts: 1})
	next, err := workspace.Open(f.ctx, b, a.clone, a.opts())
	require.NoError(t, err)
	defer next.Close()
	require.NoError(t, b.WaitPushes(f.ctx))
	assert.Equal(t, string(cp.ID), f.remoteRef("refs/grove/"+string(id)+"/head"), "the moved branch was pushed")
	_, err = githarness.Git(f.ctx, f.remote, "cat-file", "-e", strings.TrimSpace(evil))
	assert.Error(t, err, "the remote has the evil commit")
}
