package gitbackend_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// submoduleOf returns the status of the submodule at path in st.
func submoduleOf(t *testing.T, st grove.Status, path string) grove.SubmoduleStatus {
	t.Helper()
	for _, s := range st.Submodules {
		if s.Path == path {
			return s
		}
	}
	t.Fatalf("no submodule %s in %+v", path, st.Submodules)
	return grove.SubmoduleStatus{}
}

// A head comes up with its submodules checked out, recursively, from the
// repositories the main checkout's git submodule update made (a worktree
// of each, sharing its objects: nothing is cloned per head), and the
// user's git sees the head and its submodules clean and up to date.
func TestSubmodulesAreCheckedOutInEveryHead(t *testing.T) {
	t.Parallel()
	f, gitlink := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root
	assert.Equal(t, "package lib\n", readFile(t, h, "lib/lib.go"))
	assert.Equal(t, "deep\n", readFile(t, h, "lib/inner/deep.txt"))
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	subs := f.git(root, "submodule", "status", "--recursive")
	assert.Contains(t, subs, gitlink+" lib")
	for _, line := range strings.Split(subs, "\n") {
		assert.False(t, strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-"), "not up to date: %s", line)
	}
	assert.DirExists(t, filepath.Join(commonOf(f), "modules", "lib", "worktrees"))
	assert.NoDirExists(t, filepath.Join(adminOf(t, root), "modules"), "no per-head clone of a submodule")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	require.Len(t, st.Submodules, 2)
	assert.Equal(t, grove.CheckpointID(gitlink), submoduleOf(t, st, "lib").Commit)
	assert.Equal(t, "inner", submoduleOf(t, st, "lib/inner").Name)

	// Without submodules, as git worktree add leaves them.
	bare, err := f.ws.NewHead("bare").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer bare.Close()
	ents, err := os.ReadDir(filepath.Join(bare.Info().Root, "lib"))
	require.NoError(t, err)
	assert.Empty(t, ents)
	assert.True(t, bare.Info().NoSubmodules)
	fork, err := bare.Fork(f.ctx, "bare-fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	assert.True(t, fork.Info().NoSubmodules, "a fork of a head without submodules has none")
	assert.NoFileExists(t, filepath.Join(fork.Info().Root, "lib", "lib.go"))
}

// Work inside submodules, two levels deep, is checkpointed as commits in
// their own repositories, on the head's refs there, which the
// superproject's checkpoint records; restore and fork bring every level
// back exactly, and landing records the submodule's new commit.
func TestWorkInSubmodulesIsCheckpointedRestoredAndForked(t *testing.T) {
	t.Parallel()
	f, gitlink := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root
	f.write(h, "lib/lib.go", "package lib // changed\n")
	f.write(h, "lib/new.txt", "new in lib\n")
	f.write(h, "lib/inner/deep.txt", "deeper\n")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.True(t, st.Dirty)
	assert.Contains(t, st.Changes, grove.Change{Path: "lib", Kind: grove.ChangeModified})
	lib := submoduleOf(t, st, "lib")
	assert.Contains(t, lib.Changes, grove.Change{Path: "lib/lib.go", Kind: grove.ChangeModified})
	assert.Contains(t, lib.Changes, grove.Change{Path: "lib/new.txt", Kind: grove.ChangeUntracked})
	assert.Contains(t, lib.Changes, grove.Change{Path: "lib/inner", Kind: grove.ChangeModified})
	assert.Contains(t, submoduleOf(t, st, "lib/inner").Changes, grove.Change{Path: "lib/inner/deep.txt", Kind: grove.ChangeModified})

	cp, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Message: "work in lib"})
	require.NoError(t, err)
	libRepo := filepath.Join(commonOf(f), "modules", "lib")
	newLink := gitlinkAt(f, string(cp.ID), "lib")
	require.NotEmpty(t, newLink)
	require.NotEqual(t, gitlink, newLink)
	assert.Equal(t, "package lib // changed", f.git(libRepo, "show", newLink+":lib.go"))
	assert.Equal(t, "new in lib", f.git(libRepo, "show", newLink+":new.txt"))
	assert.Equal(t, gitlink, strings.TrimSpace(f.git(libRepo, "rev-parse", newLink+"^")), "on top of the recorded commit")
	assert.Equal(t, newLink, strings.TrimSpace(f.git(libRepo, "rev-parse", "refs/grove/"+string(h.Info().ID)+"/m/"+newLink)))
	innerNew := strings.Fields(f.git(libRepo, "ls-tree", newLink, "inner"))[2]
	innerRepo := filepath.Join(libRepo, "modules", "inner")
	assert.Equal(t, "deeper", f.git(innerRepo, "show", innerNew+":deep.txt"))
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	assert.Empty(t, f.git(root, "status", "--porcelain"), "the user's git sees it all clean")

	// A fork with dirty work in the submodule has it too; the source
	// keeps it.
	f.write(h, "lib/inner/dirty.txt", "uncommitted\n")
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	assert.Equal(t, "uncommitted\n", readFile(t, fork, "lib/inner/dirty.txt"))
	assert.Equal(t, "package lib // changed\n", readFile(t, fork, "lib/lib.go"))
	assert.Equal(t, "uncommitted\n", readFile(t, h, "lib/inner/dirty.txt"))
	assert.Empty(t, f.git(fork.Info().Root, "status", "--porcelain"))

	// Restore both ways (the fork's checkpoint of the source holds the
	// dirty work).
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	forked := st.LastCheckpoint
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Equal(t, "package lib\n", readFile(t, h, "lib/lib.go"))
	assert.Equal(t, "deep\n", readFile(t, h, "lib/inner/deep.txt"))
	assert.NoFileExists(t, filepath.Join(root, "lib", "new.txt"))
	assert.NoFileExists(t, filepath.Join(root, "lib", "inner", "dirty.txt"))
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	_, err = h.Restore(f.ctx, grove.Rev(forked), nil)
	require.NoError(t, err)
	assert.Equal(t, "uncommitted\n", readFile(t, h, "lib/inner/dirty.txt"))
	assert.Equal(t, "new in lib\n", readFile(t, h, "lib/new.txt"))
	assert.Empty(t, f.git(root, "status", "--porcelain"))

	// Diff shows the changed gitlink.
	d, err := h.Diff(f.ctx, "main", grove.Live)
	require.NoError(t, err)
	assert.Contains(t, d.Patch, "+Subproject commit ")

	land, err := h.Land(f.ctx, &workspace.LandOptions{Branch: "landed"})
	require.NoError(t, err)
	assert.Equal(t, gitlinkAt(f, string(forked), "lib"), gitlinkAt(f, string(land.Commit), "lib"))
}

// Destroying a head without Discard loses nothing of a submodule's
// uncaptured work (the final checkpoint holds it, kept by a ref in the
// submodule's repository), and takes the head's registrations out of the
// submodules' repositories.
func TestDestroyKeepsASubmodulesWork(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	id := h.Info().ID
	f.write(h, "lib/inner/only-here.txt", "the agent's\n")
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
	innerRepo := filepath.Join(commonOf(f), "modules", "lib", "modules", "inner")
	refs := f.git(innerRepo, "for-each-ref", "--format=%(refname)", "refs/grove/"+string(id)+"/")
	require.NotEmpty(t, refs)
	assert.Equal(t, "the agent's", f.git(innerRepo, "show", strings.Fields(refs)[0]+":only-here.txt"))
	for _, repo := range []string{filepath.Join(commonOf(f), "modules", "lib"), innerRepo} {
		ents, _ := os.ReadDir(filepath.Join(repo, "worktrees"))
		assert.Empty(t, ents, "registrations left in %s", repo)
	}
}

// A submodule commit the submodule's repository lacks is NotFound naming
// the submodule, and the create leaves nothing behind; without
// submodules the head is made.
func TestAMissingSubmoduleCommitIsATypedError(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	missing := strings.Repeat("ab", 20)
	f.git(f.repo, "update-index", "--cacheinfo", "160000,"+missing+",lib")
	f.git(f.repo, "commit", "-qm", "a commit lib's repository lacks")
	_, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.Error(t, err)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "%v", err)
	var se *grove.SubmoduleError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "lib", se.Path)
	assert.Equal(t, missing, se.Commit)
	assert.Contains(t, err.Error(), "lib")
	heads, err := f.ws.Heads(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, heads)
	assert.NoDirExists(t, filepath.Join(filepath.Dir(f.repo), "repo.grove", "agent"))

	h, err := f.ws.NewHead("agent").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
}

// What the agent writes in .gitmodules (a name that climbs out of the
// modules directory, another submodule's repository) and in a
// submodule's own configuration (a filter, a hook, core.worktree) makes
// grove run nothing, read no repository outside modules/, and write
// nothing outside the head.
func TestAttackASubmoduleCheckoutRunsNothingAndStaysInside(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	tmp := t.TempDir()
	pwned := filepath.Join(tmp, "pwned")
	libRepo := filepath.Join(commonOf(f), "modules", "lib")
	// The submodule's configuration, shared by every head's checkout.
	f.git(libRepo, "config", "filter.evil.clean", "touch "+pwned+"; cat")
	f.git(libRepo, "config", "filter.evil.smudge", "touch "+pwned+"; cat")
	f.git(libRepo, "config", "filter.evil.required", "true")
	f.git(libRepo, "config", "core.hooksPath", tmp)
	f.git(libRepo, "config", "core.fsmonitor", "touch "+pwned)
	elsewhere := filepath.Join(tmp, "elsewhere")
	require.NoError(t, os.MkdirAll(elsewhere, 0o755))
	f.git(libRepo, "config", "core.worktree", elsewhere)
	for _, hook := range []string{"post-checkout", "pre-commit", "reference-transaction"} {
		require.NoError(t, os.WriteFile(filepath.Join(tmp, hook), []byte("#!/bin/sh\ntouch "+pwned+"\n"), 0o755))
	}
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	f.write(h, "lib/.gitattributes", "* filter=evil\n")
	f.write(h, "lib/lib.go", "package lib // edited\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.NoFileExists(t, pwned, "a command the submodule's configuration names ran")
	ents, err := os.ReadDir(elsewhere)
	require.NoError(t, err)
	assert.Empty(t, ents, "core.worktree redirected a checkout")

	// A .gitmodules whose name climbs out (to the user's repository
	// beside), and one naming another submodule's repository for lib.
	users := filepath.Join(tmp, "users")
	f.git(tmp, "init", "-q", users)
	for _, name := range []string{"../../../../users", "lib/modules/inner"} {
		f.write(h, ".gitmodules", "[submodule \""+name+"\"]\n\tpath = lib\n\turl = x\n")
		cp, err := h.Checkpoint(f.ctx, nil)
		require.NoError(t, err)
		_, err = h.Restore(f.ctx, "main", nil)
		require.NoError(t, err)
		_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
		require.NoError(t, err)
		ents, err := os.ReadDir(filepath.Join(h.Info().Root, "lib"))
		require.NoError(t, err)
		assert.Empty(t, ents, "name %q: a repository it names was checked out", name)
	}
	_, err = os.Stat(filepath.Join(users, ".git", "worktrees"))
	assert.True(t, os.IsNotExist(err), "the user's repository got a registration")
}

// The user's git agrees with grove in a head: git submodule status shows
// each submodule at the commit grove's checkpoint recorded, and git
// submodule update (from the objects there, fetching nothing) changes
// nothing; work the agent commits in a submodule on a branch of its own
// is recorded by the next checkpoint, the branch left where it is.
func TestGitSubmoduleCommandsAgreeWithGrove(t *testing.T) {
	t.Parallel()
	f, gitlink := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root
	lib := filepath.Join(root, "lib")
	f.write(h, "lib/inner/deep.txt", "changed\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	newLink := gitlinkAt(f, string(cp.ID), "lib")
	subs := f.git(root, "submodule", "status", "--recursive")
	assert.Contains(t, subs, newLink+" lib")
	for _, line := range strings.Split(subs, "\n") {
		assert.False(t, strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-"), "not what grove recorded: %s", line)
	}
	f.git(root, "submodule", "update", "--recursive")
	assert.Equal(t, "changed\n", readFile(t, h, "lib/inner/deep.txt"))
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	// git submodule update in a head leaves the user's checkout of each
	// submodule its own (it rewrites a core.worktree the head can see).
	mainLib := filepath.Join(f.repo, "lib")
	for _, dir := range []string{mainLib, filepath.Join(mainLib, "inner")} {
		assert.Equal(t, dir, strings.TrimSpace(f.git(dir, "rev-parse", "--show-toplevel")))
	}
	assert.Empty(t, f.git(f.repo, "status", "--porcelain"))
	libRepo := filepath.Join(commonOf(f), "modules", "lib")
	assert.Equal(t, mainLib, strings.TrimSpace(f.git(libRepo, "rev-parse", "--show-toplevel")), "git in the submodule's repository works on the user's checkout")

	// The agent's own branch and commit in lib.
	f.git(lib, "checkout", "-q", "-b", "agent-work")
	f.write(h, "lib/agent.txt", "committed by the agent\n")
	f.git(lib, "add", "agent.txt")
	f.git(lib, "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qm", "the agent's commit")
	agentCommit := strings.TrimSpace(f.git(lib, "rev-parse", "HEAD"))
	f.write(h, "lib/uncommitted.txt", "not committed\n")
	cp2, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	recorded := gitlinkAt(f, string(cp2.ID), "lib")
	assert.Equal(t, agentCommit, strings.TrimSpace(f.git(libRepo, "rev-parse", recorded+"^")), "on top of the agent's commit")
	assert.Equal(t, "not committed", f.git(libRepo, "show", recorded+":uncommitted.txt"))
	assert.Equal(t, agentCommit, strings.TrimSpace(f.git(lib, "rev-parse", "agent-work")), "the agent's branch is left where it was")
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	assert.Equal(t, gitlink, strings.TrimSpace(f.git(lib, "rev-parse", "HEAD")))
	_, err = h.Restore(f.ctx, grove.Rev(cp2.ID), nil)
	require.NoError(t, err)
	assert.Equal(t, "not committed\n", readFile(t, h, "lib/uncommitted.txt"))
	assert.Equal(t, "committed by the agent\n", readFile(t, h, "lib/agent.txt"))
}

// A head deleted by hand is rebuilt by Recreate with its submodules at
// the commits its last checkpoint recorded.
func TestRecreateChecksSubmodulesOutAgain(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	f.write(h, "lib/inner/deep.txt", "checkpointed deep\n")
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	info, bind := h.Info(), h.Binding()
	require.NoError(t, h.Close())
	require.NoError(t, os.RemoveAll(info.Root))
	r, err := workspace.Reopen(f.ctx, f.ws.Backend(), bind, &workspace.ReopenOptions{Recreate: true})
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, "checkpointed deep\n", readFile(t, r, "lib/inner/deep.txt"))
	st, err := r.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	assert.Empty(t, f.git(info.Root, "status", "--porcelain"))
}

// core.worktree an agent sets in its head's submodule (git config there
// writes the submodule repository's shared config) redirects neither
// another head's checkout of it nor the user's.
func TestAttackAHeadsSubmoduleCoreWorktreeReachesNoOtherCheckout(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	a, err := f.ws.NewHead("a").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer a.Close()
	b, err := f.ws.NewHead("b").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	elsewhere := t.TempDir()
	f.git(filepath.Join(a.Info().Root, "lib"), "config", "core.worktree", elsewhere)
	for _, dir := range []string{filepath.Join(a.Info().Root, "lib"), filepath.Join(b.Info().Root, "lib"), filepath.Join(f.repo, "lib")} {
		assert.Equal(t, dir, strings.TrimSpace(f.git(dir, "rev-parse", "--show-toplevel")), "git in %s", dir)
	}
	assert.Empty(t, f.git(b.Info().Root, "status", "--porcelain"))
	assert.Empty(t, f.git(f.repo, "status", "--porcelain"))
}

// A repository an agent makes inside a submodule (a scaffolding tool's
// git init) is captured as files, as one in the head's top is: a fork
// and a restore bring its files back, and no command its configuration
// names runs, even once the agent stages it in the submodule as a
// gitlink.
func TestANestedRepositoryInASubmoduleIsCapturedAsFiles(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	tool := filepath.Join(h.Info().Root, "lib", "tool")
	f.git(h.Info().Root, "init", "-q", tool)
	pwned := filepath.Join(t.TempDir(), "pwned")
	f.git(tool, "config", "filter.evil.clean", "touch "+pwned+"; cat")
	f.git(tool, "config", "filter.evil.required", "true")
	f.writeFile(tool, ".gitattributes", "* filter=evil\n")
	f.writeFile(tool, "gen.txt", "generated\n")
	f.git(tool, "-c", "filter.evil.clean=cat", "add", ".")
	f.git(tool, "-c", "filter.evil.clean=cat", "commit", "-qm", "scaffold")
	f.writeFile(tool, "gen.txt", "edited\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	lib := gitlinkAt(f, string(cp.ID), "lib")
	require.NotEmpty(t, lib)
	libRepo := filepath.Join(commonOf(f), "modules", "lib")
	assert.Equal(t, "edited", f.git(libRepo, "show", lib+":tool/gen.txt"))

	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	data, err := os.ReadFile(filepath.Join(fork.Info().Root, "lib", "tool", "gen.txt"))
	require.NoError(t, err)
	assert.Equal(t, "edited\n", string(data))

	// Staged in the submodule's index as a gitlink, it is still files.
	f.git(filepath.Join(h.Info().Root, "lib"), "add", "tool")
	f.writeFile(tool, "gen.txt", "again\n")
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "again", f.git(libRepo, "show", gitlinkAt(f, string(cp.ID), "lib")+":tool/gen.txt"))
	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.NoFileExists(t, pwned, "a filter the nested repository names ran")
}
