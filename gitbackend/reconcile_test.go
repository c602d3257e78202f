package gitbackend_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// kinds maps each finding's kind to the findings of that kind.
func kinds(rep grove.ReconcileReport) map[grove.FindingKind][]grove.Finding {
	out := map[grove.FindingKind][]grove.Finding{}
	for _, f := range rep.Findings {
		out[f.Kind] = append(out[f.Kind], f)
	}
	return out
}

// Every orphan kind planted by hand is found, --fix repairs what is safe,
// and after it git fsck and git worktree list are clean and every head
// opens with its files.
func TestReconcileFindsAndFixesEachOrphanKind(t *testing.T) {
	f := newFixture(t)
	ws := f.ws
	ctx := f.ctx

	// A head deleted by hand.
	deleted := f.head("deleted")
	f.write(deleted, "kept.txt", "checkpointed\n")
	_, err := deleted.Checkpoint(ctx, nil)
	require.NoError(t, err)
	require.NoError(t, deleted.Close())
	require.NoError(t, os.RemoveAll(deleted.Info().Root))

	// A head whose registration was deleted, holding uncaptured work.
	unreg := f.head("unregistered")
	f.write(unreg, "uncaptured.txt", "work in progress\n")
	require.NoError(t, unreg.Close())
	require.NoError(t, os.RemoveAll(adminOf(t, unreg.Info().Root)))

	// A head whose .git file an agent rewrote.
	relinked := f.head("relinked")
	require.NoError(t, relinked.Close())
	require.NoError(t, os.WriteFile(filepath.Join(relinked.Info().Root, ".git"), []byte("gitdir: /nonexistent\n"), 0o644))

	// A user's worktree deleted without git worktree remove.
	userWT := filepath.Join(t.TempDir(), "user-wt")
	f.git(f.repo, "worktree", "add", "-q", "-b", "user", userWT, "main")
	require.NoError(t, os.RemoveAll(userWT))

	// Lock files of killed processes: a git index.lock from long ago and
	// the marker of an interrupted grove operation.
	locked := f.head("locked")
	require.NoError(t, locked.Close())
	lockFile := filepath.Join(adminOf(t, locked.Info().Root), "index.lock")
	require.NoError(t, os.WriteFile(lockFile, nil, 0o644))
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(lockFile, old, old))
	marker := filepath.Join(f.repo, ".git", "grove", "heads", string(locked.Info().ID)+".op")
	require.NoError(t, os.WriteFile(marker, []byte("checkpoint\n"), 0o644))

	// A stray worktree directory no head owns.
	stray := filepath.Join(filepath.Dir(deleted.Info().Root), "stray")
	require.NoError(t, os.MkdirAll(stray, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stray, ".git"), []byte("gitdir: "+filepath.Join(f.repo, ".git", "worktrees", "ghost")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(stray, "precious.txt"), []byte("mine\n"), 0o644))

	rep, err := ws.Reconcile(ctx, nil)
	require.NoError(t, err)
	found := kinds(rep)
	names := func(k grove.FindingKind) []string {
		var out []string
		for _, fd := range found[k] {
			out = append(out, fd.Head+fd.Path)
			assert.False(t, fd.Fixed, "reporting fixes nothing")
		}
		return out
	}
	assert.Len(t, found[grove.FindingMissingHead], 1, "%v", rep)
	assert.Equal(t, "deleted", found[grove.FindingMissingHead][0].Head)
	require.Len(t, found[grove.FindingUnregistered], 2, "%v", names(grove.FindingUnregistered))
	require.Len(t, found[grove.FindingStaleRegistration], 1)
	assert.Contains(t, found[grove.FindingStaleRegistration][0].Detail, userWT)
	assert.Len(t, found[grove.FindingStaleLock], 2, "%v", names(grove.FindingStaleLock))
	require.Len(t, found[grove.FindingStrayDirectory], 1)
	assert.Equal(t, stray, found[grove.FindingStrayDirectory][0].Path)
	assert.NoDirExists(t, deleted.Info().Root, "reporting rebuilds nothing")
	assert.Contains(t, f.git(f.repo, "worktree", "list", "--porcelain"), "prunable")

	rep, err = ws.Reconcile(ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	for _, fd := range rep.Findings {
		switch fd.Kind {
		case grove.FindingStrayDirectory, grove.FindingUncaptured:
			assert.False(t, fd.Fixed, "%+v", fd)
			assert.NotEmpty(t, fd.FixError)
		default:
			assert.True(t, fd.Fixed, "%+v", fd)
		}
	}
	assert.FileExists(t, filepath.Join(stray, "precious.txt"), "a stray directory is never deleted")
	assert.NoFileExists(t, lockFile)
	assert.NoFileExists(t, marker)

	// After the fix: git is clean, every head opens, no file was lost.
	f.git(f.repo, "fsck", "--no-progress")
	list := f.git(f.repo, "worktree", "list", "--porcelain")
	assert.NotContains(t, list, "prunable")
	assert.NotContains(t, list, userWT)
	for _, name := range []string{"deleted", "unregistered", "relinked", "locked"} {
		h, err := ws.OpenHead(ctx, name, nil)
		require.NoError(t, err, name)
		st, err := h.Status(ctx)
		require.NoError(t, err, name)
		if name == "unregistered" {
			assert.True(t, st.Dirty)
			data, err := os.ReadFile(filepath.Join(h.Info().Root, "uncaptured.txt"))
			require.NoError(t, err)
			assert.Equal(t, "work in progress\n", string(data))
		} else {
			assert.False(t, st.Dirty, "%s: %+v", name, st.Changes)
		}
		out, err := gitUser(ctx, h.Info().Root, "status", "--porcelain")
		require.NoError(t, err, "git status works in %s", name)
		if name != "unregistered" {
			assert.Empty(t, out)
		}
		require.NoError(t, h.Close())
	}
	data, err := os.ReadFile(filepath.Join(deleted.Info().Root, "kept.txt"))
	require.NoError(t, err)
	assert.Equal(t, "checkpointed\n", string(data))

	// A second pass finds only what is never fixed.
	rep, err = ws.Reconcile(ctx, nil)
	require.NoError(t, err)
	found = kinds(rep)
	assert.Len(t, found, 2, "%+v", rep.Findings)
	assert.Len(t, found[grove.FindingUncaptured], 1)
	assert.Len(t, found[grove.FindingStrayDirectory], 1)
}

// Creates and destroys killed while the workspace is open are found and
// finished; a head another process works on is left alone.
func TestReconcileFinishesInterruptedCreatesAndDestroys(t *testing.T) {
	f := newBigFixture(t, 200)
	h := f.head("doomed")
	bind := h.Binding()
	data, err := bind.Encode()
	require.NoError(t, err)
	root := h.Info().Root
	require.NoError(t, h.Close())
	b := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(f.ctx, b, f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()

	kill(t, startHelper(t, helperJob{Op: "create", Repo: f.repo, Name: "half", Point: "create:registered"}), 0)
	kill(t, startHelper(t, helperJob{Op: "destroy", Repo: f.repo, Binding: data, Point: "destroy:trashed"}), 0)

	rep, err := ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	found := kinds(rep)
	require.Len(t, found[grove.FindingInterruptedCreate], 1, "%+v", rep.Findings)
	assert.Equal(t, "half", found[grove.FindingInterruptedCreate][0].Head)
	assert.GreaterOrEqual(t, len(found[grove.FindingInterruptedDestroy]), 1, "%+v", rep.Findings)
	for _, fd := range rep.Findings {
		assert.True(t, fd.Fixed, "%+v", fd)
	}
	assertNothingLeftOf(t, f, "half")
	_, err = ws.OpenHead(f.ctx, "doomed", nil)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err))
	_, err = workspace.Reopen(f.ctx, b, bind, nil)
	assert.Equal(t, grove.Destroyed, grove.CodeOf(err))
	assert.NoDirExists(t, root)
	ents, _ := os.ReadDir(filepath.Join(filepath.Dir(root), ".grove-trash"))
	assert.Empty(t, ents)
	assert.NotContains(t, f.git(f.repo, "worktree", "list", "--porcelain"), "prunable")
	f.git(f.repo, "fsck", "--no-progress")
}

// assertNothingLeftOf checks that no branch, registration or live head of
// name is left.
func assertNothingLeftOf(t *testing.T, f *fixture, name string) {
	t.Helper()
	assert.Empty(t, f.git(f.repo, "branch", "--list", "grove/"+name))
	assert.NotContains(t, f.git(f.repo, "worktree", "list", "--porcelain"), "/"+name+"\n")
}

// A repository moved with its heads where they were: the registrations
// are found pointing at the old place and re-linked.
func TestReconcileRelinksHeadsOfAMovedRepository(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "work.txt", "w\n")
	_, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	root := h.Info().Root
	require.NoError(t, h.Close())
	require.NoError(t, f.ws.Close())
	moved := f.repo + "-moved"
	require.NoError(t, os.Rename(f.repo, moved))
	f.repo = moved

	ws := f.open()
	_, err = ws.OpenHead(f.ctx, "agent", nil)
	require.Error(t, err, "the head's records name the old place")
	rep, err := ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	found := kinds(rep)
	require.Len(t, found[grove.FindingMovedRepository], 1, "%+v", rep.Findings)
	assert.True(t, found[grove.FindingMovedRepository][0].Fixed, "%+v", found[grove.FindingMovedRepository][0])
	h, err = ws.OpenHead(f.ctx, "agent", nil)
	require.NoError(t, err)
	defer h.Close()
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty)
	out, err := gitUser(f.ctx, root, "status", "--porcelain")
	require.NoError(t, err)
	assert.Empty(t, out)
	f.git(f.repo, "fsck", "--no-progress")
}

// plantManifest writes, as an agent that can write the common git dir
// can, a manifest naming dir as the directory of a head on branch.
func plantManifest(t *testing.T, f *fixture, name, branch, dir string) grove.HeadID {
	t.Helper()
	id := grove.HeadID("00000000-0000-4000-8000-00000000beef")
	common := filepath.Join(f.repo, ".git")
	mf := fmt.Sprintf(`{"version":1,"id":%q,"name":%q,"access":"isolated","branch":%q,"dir":%q,"admin":%q,"base":"","state":"active","created":"2026-01-01T00:00:00Z"}`,
		id, name, branch, dir, filepath.Join(common, "worktrees", name))
	require.NoError(t, os.WriteFile(filepath.Join(common, "grove", "heads", string(id)+".json"), []byte(mf), 0o644))
	return id
}

// A manifest an agent planted cannot make grove write outside the heads
// directory: no recreate at a path it names (the agent's branch checked
// out into the user's autostart directory), no .git file planted in a
// directory of the user's.
func TestAPlantedManifestCannotAimRepairsOutsideTheHeads(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "evil.desktop", "[Desktop Entry]\nExec=sh -c pwned\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	// A branch no worktree has checked out (an agent with a shell makes one).
	branch := "evil"
	f.git(f.repo, "branch", branch, string(cp.ID))
	require.NoError(t, h.Close())

	autostart := filepath.Join(t.TempDir(), "config", "autostart")
	plantManifest(t, f, "autostart", branch, autostart)
	_, err = f.ws.OpenHead(f.ctx, "autostart", &workspace.ReopenOptions{Recreate: true})
	require.Error(t, err)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	assert.NoDirExists(t, autostart, "nothing is checked out where a planted manifest points")

	f2 := newFixture(t)
	project := filepath.Join(t.TempDir(), "project")
	require.NoError(t, os.MkdirAll(project, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "secret.txt"), []byte("the user's\n"), 0o644))
	f2.git(f2.repo, "branch", "evil", "main")
	plantManifest(t, f2, "project", "evil", project)
	_, err = f2.ws.Reconcile(f2.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(project, ".git"), "no .git file is planted in the user's directory")
}

// A process killed while it holds a head is a dead holder: the kernel
// freed the lock, its record is left; doctor names it, --fix erases it.
func TestReconcileReportsLocksOfKilledHolders(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	bind := h.Binding()
	data, err := bind.Encode()
	require.NoError(t, err)
	require.NoError(t, h.Close())
	rep, err := f.ws.Reconcile(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, rep.Findings, "closed cleanly: nothing to report")

	kill(t, startHelper(t, helperJob{Op: "hold", Repo: f.repo, Binding: data}), 0)
	rep, err = f.ws.Reconcile(f.ctx, nil)
	require.NoError(t, err)
	found := kinds(rep)[grove.FindingStaleLock]
	require.NotEmpty(t, found, "%+v", rep.Findings)
	assert.Equal(t, "agent", found[0].Head)
	assert.Contains(t, found[0].Detail, "died")

	rep, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	for _, fd := range rep.Findings {
		assert.True(t, fd.Fixed, "%+v", fd)
	}
	rep, err = f.ws.Reconcile(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, rep.Findings)
	h, err = workspace.Reopen(f.ctx, f.ws.Backend(), bind, nil)
	require.NoError(t, err)
	require.NoError(t, h.Close())
}
