package gitbackend_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// byHand runs git as a user would, with an identity.
func (f *fixture) byHand(dir string, args ...string) string {
	f.t.Helper()
	return f.git(dir, append([]string{"-c", "user.name=u", "-c", "user.email=u@x"}, args...)...)
}

// scratch is a detached worktree at rev, for doing by hand what Land does.
func (f *fixture) scratch(rev string) string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "scratch")
	f.git(f.repo, "worktree", "add", "-q", "--detach", dir, rev)
	return dir
}

// landFixture is a repository whose head "agent" has three checkpoints
// (one with grove's default message) touching work.txt and notes/, and
// whose main moved on by one commit touching other.txt.
func landFixture(t *testing.T) (*fixture, *workspace.Head) {
	f := newFixture(t)
	h := f.head("agent")
	f.write(h, "work.txt", "one\n")
	_, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Message: "start the work"})
	require.NoError(t, err)
	f.write(h, "notes/a.md", "notes\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	f.write(h, "work.txt", "one\ntwo\n")
	_, err = h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Message: "finish the work"})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "other.txt"), []byte("main moved on\n"), 0o644))
	f.byHand(f.repo, "add", "other.txt")
	f.byHand(f.repo, "commit", "-qm", "main moves on")
	return f, h
}

func TestLandSquashEqualsGitMergeSquashAndUpdatesTheMainCheckout(t *testing.T) {
	f, h := landFixture(t)
	before := f.git(f.repo, "rev-parse", "main")
	tip := f.git(f.repo, "rev-parse", h.Info().Branch)
	refs := f.git(f.repo, "for-each-ref", "refs/grove/")

	res, err := h.Land(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "main", res.Onto)
	assert.Equal(t, "main", res.Branch)
	assert.Equal(t, before, string(res.Base))
	require.Len(t, res.Commits, 1)
	assert.Equal(t, res.Commits[0], res.Commit)
	assert.Equal(t, f.repo, res.Worktree, "the main checkout moved with its branch")

	// The same by hand: git merge --squash, then the tree.
	s := f.scratch(before)
	f.byHand(s, "merge", "--squash", "-q", tip)
	want := f.byHand(s, "write-tree")
	assert.Equal(t, want, f.git(f.repo, "rev-parse", string(res.Commit)+"^{tree}"))
	assert.Equal(t, before, f.git(f.repo, "rev-parse", string(res.Commit)+"^"), "one parent: the branch's old tip")
	assert.Equal(t, string(res.Commit), f.git(f.repo, "rev-parse", "main"))

	// The main checkout is at the new commit, clean, with the files.
	assert.Empty(t, f.git(f.repo, "status", "--porcelain"))
	data, err := os.ReadFile(filepath.Join(f.repo, "work.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\n", string(data))

	msg := f.git(f.repo, "log", "-1", "--format=%B", "main")
	assert.True(t, strings.HasPrefix(msg, "agent: finish the work\n"), "%q", msg)
	assert.Contains(t, msg, "- start the work\n- finish the work")
	assert.NotContains(t, msg, "grove checkpoint")

	assert.Equal(t, tip, f.git(f.repo, "rev-parse", h.Info().Branch), "the head's branch stays")
	assert.Equal(t, refs, f.git(f.repo, "for-each-ref", "refs/grove/"), "every checkpoint stays")
	f.git(f.repo, "fsck", "--no-progress")
}

func TestLandRebaseEqualsGitRebase(t *testing.T) {
	f, h := landFixture(t)
	before := f.git(f.repo, "rev-parse", "main")
	tip := f.git(f.repo, "rev-parse", h.Info().Branch)
	res, err := h.Land(f.ctx, &workspace.LandOptions{Strategy: grove.LandRebase, Branch: "review/agent"})
	require.NoError(t, err)
	assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"), "with Branch, main does not move")
	assert.Empty(t, res.Worktree)
	require.Len(t, res.Commits, 3)

	s := f.scratch(tip)
	f.byHand(s, "rebase", "-q", before)
	wantTrees := strings.Fields(f.git(s, "log", "--reverse", "--format=%T", before+"..HEAD"))
	wantMsgs := f.git(s, "log", "--reverse", "--format=%s|%an", before+"..HEAD")
	gotTrees := strings.Fields(f.git(f.repo, "log", "--reverse", "--format=%T", before+"..review/agent"))
	assert.Equal(t, wantTrees, gotTrees)
	assert.Equal(t, wantMsgs, f.git(f.repo, "log", "--reverse", "--format=%s|%an", before+"..review/agent"))
	assert.Equal(t, string(res.Commit), f.git(f.repo, "rev-parse", "review/agent"))
	f.git(f.repo, "fsck", "--no-progress")
}

func TestLandMergeEqualsGitMergeNoFF(t *testing.T) {
	f, h := landFixture(t)
	before := f.git(f.repo, "rev-parse", "main")
	tip := f.git(f.repo, "rev-parse", h.Info().Branch)
	res, err := h.Land(f.ctx, &workspace.LandOptions{Strategy: grove.LandMerge, Message: "merge the agent's work\n"})
	require.NoError(t, err)
	s := f.scratch(before)
	f.byHand(s, "merge", "--no-ff", "-q", "-m", "x", tip)
	assert.Equal(t, f.git(s, "rev-parse", "HEAD^{tree}"), f.git(f.repo, "rev-parse", string(res.Commit)+"^{tree}"))
	assert.Equal(t, before+" "+tip, f.git(f.repo, "log", "-1", "--format=%P", string(res.Commit)))
	assert.Equal(t, "merge the agent's work", f.git(f.repo, "log", "-1", "--format=%B", "main"))
	assert.Empty(t, f.git(f.repo, "status", "--porcelain"))
	f.git(f.repo, "fsck", "--no-progress")
}

// A conflict is found before anything is written: nothing changes, and
// the error lists the paths.
func TestLandConflictChangesNothingAndListsThePaths(t *testing.T) {
	for _, strategy := range []grove.LandStrategy{grove.LandSquash, grove.LandRebase, grove.LandMerge} {
		t.Run(string(strategy), func(t *testing.T) {
			f, h := landFixture(t)
			require.NoError(t, os.WriteFile(filepath.Join(f.repo, "work.txt"), []byte("main's own\n"), 0o644))
			f.byHand(f.repo, "add", "work.txt")
			f.byHand(f.repo, "commit", "-qm", "main writes work.txt")
			before := f.git(f.repo, "rev-parse", "main")
			refs := f.git(f.repo, "for-each-ref")

			_, err := h.Land(f.ctx, &workspace.LandOptions{Strategy: strategy})
			require.Error(t, err)
			assert.Equal(t, grove.Conflict, grove.CodeOf(err))
			var lc *grove.LandConflict
			require.True(t, errors.As(err, &lc), "%v", err)
			assert.Equal(t, []string{"work.txt"}, lc.Paths)
			assert.Contains(t, err.Error(), "work.txt")
			assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"))
			assert.Equal(t, refs, f.git(f.repo, "for-each-ref"), "no ref changed")
			assert.Empty(t, f.git(f.repo, "status", "--porcelain"), "the main checkout is untouched")
			f.git(f.repo, "fsck", "--no-progress")
		})
	}
}

// The main checkout has main checked out: with changes of its own there,
// Land refuses, naming it, and nothing moves; a dry run computes without
// moving; a new branch is written whatever the checkout holds.
func TestLandOntoACheckedOutBranchWithChangesRefuses(t *testing.T) {
	f, h := landFixture(t)
	before := f.git(f.repo, "rev-parse", "main")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("the user's edit\n"), 0o644))
	_, err := h.Land(f.ctx, nil)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
	assert.Contains(t, err.Error(), f.repo)
	assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"))
	data, err := os.ReadFile(filepath.Join(f.repo, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "the user's edit\n", string(data))

	res, err := h.Land(f.ctx, &workspace.LandOptions{DryRun: true})
	require.NoError(t, err)
	assert.True(t, res.DryRun)
	assert.NotEqual(t, before, string(res.Commit))
	assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"))

	res, err = h.Land(f.ctx, &workspace.LandOptions{Branch: "review/agent"})
	require.NoError(t, err)
	assert.Equal(t, string(res.Commit), f.git(f.repo, "rev-parse", "review/agent"))
	assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"))
	_, err = h.Land(f.ctx, &workspace.LandOptions{Branch: "review/agent"})
	assert.Equal(t, grove.AlreadyExists, grove.CodeOf(err))
	_, err = h.Land(f.ctx, &workspace.LandOptions{Onto: "nope"})
	assert.Equal(t, grove.NotFound, grove.CodeOf(err))
	_, err = h.Land(f.ctx, &workspace.LandOptions{Strategy: "octopus"})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err))
}

// Uncommitted work is checkpointed and landed; a head with nothing new
// lands nothing.
func TestLandTakesUncommittedWorkAndNothingTwice(t *testing.T) {
	f, h := landFixture(t)
	f.write(h, "late.txt", "written after the last checkpoint\n")
	res, err := h.Land(f.ctx, nil)
	require.NoError(t, err)
	assert.Contains(t, f.git(f.repo, "ls-tree", "-r", "--name-only", string(res.Commit)), "late.txt")
	require.NotNil(t, res.Checkpoint, "the checkpoint of uncommitted work is returned")
	assert.Contains(t, f.git(f.repo, "ls-tree", "-r", "--name-only", string(res.Checkpoint.ID)), "late.txt")
	// Its work is in main now: landing again writes nothing.
	main := f.git(f.repo, "rev-parse", "main")
	again, err := h.Land(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, again.Commits)
	assert.Equal(t, main, string(again.Commit))
	assert.Equal(t, main, f.git(f.repo, "rev-parse", "main"))
}

func TestPatchSeriesAppliesWithGitAm(t *testing.T) {
	f, h := landFixture(t)
	info := h.Info()
	tip := f.git(f.repo, "rev-parse", info.Branch)
	series, err := h.Patch(f.ctx, "", "", nil)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(series), "\nFrom: ")+boolInt(strings.HasPrefix(string(series), "From: ")), "one mail per checkpoint")
	s := f.scratch(string(info.Base))
	p := filepath.Join(t.TempDir(), "series.mbox")
	require.NoError(t, os.WriteFile(p, series, 0o644))
	f.byHand(s, "am", "-q", p)
	assert.Equal(t, f.git(f.repo, "rev-parse", tip+"^{tree}"), f.git(s, "rev-parse", "HEAD^{tree}"))

	one, err := h.Patch(f.ctx, "", "", &workspace.PatchOptions{Squash: true})
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(one), "\nSubject: "))
	s2 := filepath.Join(t.TempDir(), "s2")
	f.git(f.repo, "worktree", "add", "-q", "--detach", s2, string(info.Base))
	require.NoError(t, os.WriteFile(p, one, 0o644))
	f.byHand(s2, "am", "-q", p)
	assert.Equal(t, f.git(f.repo, "rev-parse", tip+"^{tree}"), f.git(s2, "rev-parse", "HEAD^{tree}"))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// On a git older than 2.38 (no merge-tree --write-tree), Land is a typed
// FailedPrecondition naming the version, and changes nothing. The old git
// is a stand-in that reports an older version and runs the real one.
func TestLandOnAnOlderGitNamesTheVersion(t *testing.T) {
	f, h := landFixture(t)
	real, err := exec.LookPath("git")
	require.NoError(t, err)
	old := filepath.Join(t.TempDir(), "git")
	require.NoError(t, os.WriteFile(old, []byte("#!/bin/sh\nif [ \"$1\" = version ]; then echo 'git version 2.37.1'; exit 0; fi\nexec "+real+" \"$@\"\n"), 0o755))
	bind := h.Binding()
	require.NoError(t, h.Close())
	before := f.git(f.repo, "rev-parse", "main")
	oh, err := workspace.Reopen(f.ctx, gitbackend.New(gitbackend.Options{Git: old}), bind, nil)
	require.NoError(t, err)
	defer oh.Close()
	_, err = oh.Land(f.ctx, &workspace.LandOptions{DryRun: true})
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
	assert.Contains(t, err.Error(), "2.37.1")
	assert.Contains(t, err.Error(), "2.38")
	assert.Equal(t, before, f.git(f.repo, "rev-parse", "main"))
}

// An agent without a sandbox moved main to a commit that tracks the user's
// untracked notes.txt and rewrote the main checkout's index so that the
// file looks clean by stat, then committed its deletion in its head: the
// user's grove land deleted notes.txt for good. Land now checks every file
// it would delete or overwrite by content.
func TestLandNeverDeletesAUsersFileTheIndexLiesAbout(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	notes := filepath.Join(f.repo, "notes.txt")
	user := "the user's precious notes\n"
	agent := strings.Repeat("x", len(user)-1) + "\n" // as long: the size matches
	require.NoError(t, os.WriteFile(notes, []byte(user), 0o644))

	// The agent's commit on main, tracking notes.txt with its content.
	s := f.scratch("main")
	require.NoError(t, os.WriteFile(filepath.Join(s, "notes.txt"), []byte(agent), 0o644))
	f.byHand(s, "add", "notes.txt")
	f.byHand(s, "commit", "-qm", "track notes")
	c := f.git(s, "rev-parse", "HEAD")
	f.git(f.repo, "update-ref", "refs/heads/main", c)
	// The index's stat data for notes.txt, taken while the file held the
	// agent's content; then the user's content is back, with that time
	// (and git told not to trust change times).
	past := time.Now().Add(-time.Hour) // older than the index: not racily clean
	require.NoError(t, os.WriteFile(notes, []byte(agent), 0o644))
	require.NoError(t, os.Chtimes(notes, past, past))
	f.git(f.repo, "read-tree", c)
	f.git(f.repo, "update-index", "--refresh")
	require.NoError(t, os.WriteFile(notes, []byte(user), 0o644))
	require.NoError(t, os.Chtimes(notes, past, past))
	f.git(f.repo, "config", "core.trustctime", "false")
	require.Empty(t, f.git(f.repo, "status", "--porcelain", "--untracked-files=no"), "the forged index looks clean")

	// Its head takes that commit in, and deletes the file.
	root := h.Info().Root
	f.byHand(root, "merge", "-q", "--ff-only", c)
	f.byHand(root, "rm", "-q", "notes.txt")
	f.byHand(root, "commit", "-qm", "delete notes")

	_, err := h.Land(f.ctx, nil)
	require.Error(t, err)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), "notes.txt")
	data, rerr := os.ReadFile(notes)
	require.NoError(t, rerr, "the user's file is gone")
	assert.Equal(t, user, string(data))
	assert.Equal(t, c, f.git(f.repo, "rev-parse", "main"), "main moved")
}
