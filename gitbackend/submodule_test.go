package gitbackend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// submoduleFixture is a repository whose main branch has a submodule at
// lib (with a submodule of its own), checked out in the main checkout as
// git submodule update --init --recursive leaves it.
func submoduleFixture(t *testing.T) (f *fixture, gitlink string) {
	t.Helper()
	f = newFixture(t)
	tmp := t.TempDir()
	inner, outer := filepath.Join(tmp, "inner"), filepath.Join(tmp, "outer")
	f.git(tmp, "init", "-q", "-b", "main", inner)
	f.writeFile(inner, "deep.txt", "deep\n")
	f.git(inner, "add", "deep.txt")
	f.git(inner, "commit", "-qm", "inner")
	f.git(tmp, "init", "-q", "-b", "main", outer)
	f.writeFile(outer, "lib.go", "package lib\n")
	f.git(outer, "add", "lib.go")
	f.git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", inner, "inner")
	f.git(outer, "commit", "-qm", "outer")
	f.git(f.repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", outer, "lib")
	f.git(f.repo, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
	f.git(f.repo, "commit", "-qm", "submodule")
	gitlink = strings.Fields(f.git(f.repo, "ls-tree", "HEAD", "lib"))[2]
	return f, gitlink
}

// gitlinkAt is the commit the tree of rev records for path ("" for none).
func gitlinkAt(f *fixture, rev, path string) string {
	out := f.git(f.repo, "ls-tree", rev, path)
	if fs := strings.Fields(out); len(fs) == 4 && fs[0] == "160000" {
		return fs[2]
	}
	return ""
}

// A head made with NoSubmodules leaves its submodules as git worktree add
// leaves them (empty directories), and every checkpoint, restore, fork and
// land keeps each gitlink exactly; the user's git sees the head clean.
func TestASubmodulesGitlinkSurvivesTheLifecycle(t *testing.T) {
	t.Parallel()
	f, gitlink := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root
	ents, err := os.ReadDir(filepath.Join(root, "lib"))
	require.NoError(t, err)
	assert.Empty(t, ents, "an empty submodule directory, as git worktree add leaves it")
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	assert.Contains(t, f.git(root, "submodule", "status"), "-"+gitlink+" lib")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)

	f.write(h, "README.md", "changed\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, gitlink, gitlinkAt(f, string(cp.ID), "lib"), "the checkpoint keeps the gitlink")
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), nil)
	require.NoError(t, err)
	assert.Empty(t, f.git(root, "status", "--porcelain"))
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	assert.DirExists(t, filepath.Join(fork.Info().Root, "lib"))
	res, err := h.Land(f.ctx, &workspace.LandOptions{Branch: "landed"})
	require.NoError(t, err)
	assert.Equal(t, gitlink, gitlinkAt(f, string(res.Commit), "lib"))
	assert.Equal(t, "changed\n", f.git(f.repo, "show", "landed:README.md")+"\n")
}

// Files the agent writes into a submodule's directory (by hand, or by
// checking the submodule out itself) are never lost: Status says so, a
// checkpoint captures them as files (as any nested repository's), and a
// restore gives the directory back empty.
func TestWorkInASubmodulesDirectoryIsCaptured(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	f.write(h, "lib/notes.txt", "the agent's\n")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.True(t, st.Dirty)
	assert.Contains(t, st.Changes, grove.Change{Path: "lib", Kind: grove.ChangeModified})
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "the agent's", f.git(f.repo, "show", string(cp.ID)+":lib/notes.txt"))
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	ents, err := os.ReadDir(filepath.Join(h.Info().Root, "lib"))
	require.NoError(t, err)
	assert.Empty(t, ents)
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)

	// A restore of a head with work there takes it in its safety
	// checkpoint first.
	f.write(h, "lib/unsaved.txt", "not checkpointed\n")
	res, err := h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	require.NotNil(t, res.Safety)
	assert.Equal(t, "not checkpointed", f.git(f.repo, "show", string(res.Safety.ID)+":lib/unsaved.txt"))
	assert.NoFileExists(t, filepath.Join(h.Info().Root, "lib", "unsaved.txt"))

	// Deleting the directory is the submodule's deletion, as to git.
	require.NoError(t, os.Remove(filepath.Join(h.Info().Root, "lib")))
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.Contains(t, st.Changes, grove.Change{Path: "lib", Kind: grove.ChangeDeleted})
	cp, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, gitlinkAt(f, string(cp.ID), "lib"))
}

// An agent that points a submodule's URL at a command (.gitmodules, the
// shared config), gives it an update command, or replaces its directory
// with a link out of the head, makes grove run nothing, fetch nothing and
// touch nothing outside the head, through every operation.
func TestAttackASubmoduleTheAgentConfiguresRunsNothing(t *testing.T) {
	t.Parallel()
	f, gitlink := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root
	tmp := t.TempDir()
	pwned := filepath.Join(tmp, "pwned")
	cmd := "!touch " + pwned
	f.write(h, ".gitmodules", "[submodule \"lib\"]\n\tpath = lib\n\turl = ext::sh -c touch% "+pwned+"\n\tupdate = "+cmd+"\n")
	for _, kv := range [][2]string{
		{"submodule.lib.url", "ext::sh -c touch% " + pwned},
		{"submodule.lib.update", cmd},
		{"submodule.recurse", "true"},
		{"protocol.ext.allow", "always"},
		{"core.hooksPath", tmp},
	} {
		f.git(root, "config", kv[0], kv[1])
	}
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "post-checkout"), []byte("#!/bin/sh\ntouch "+pwned+"\n"), 0o755))

	// The submodule's directory, a link to a directory of the user's.
	outside := filepath.Join(tmp, "users")
	f.writeFile(outside, "keep.txt", "the user's\n")
	require.NoError(t, os.Remove(filepath.Join(root, "lib")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "lib")))

	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.Contains(t, st.Changes, grove.Change{Path: "lib", Kind: grove.ChangeModified})
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, gitlinkAt(f, string(cp.ID), "lib"), "the link is captured as what it is")
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	fi, err := os.Lstat(filepath.Join(root, "lib"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "the restore gives the submodule its empty directory back")
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	_, err = fork.Destroy(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Land(f.ctx, &workspace.LandOptions{Branch: "landed"})
	require.NoError(t, err)
	assert.Equal(t, gitlink, gitlinkAt(f, "landed", "lib"))

	assert.NoFileExists(t, pwned, "a command the agent configured ran")
	data, err := os.ReadFile(filepath.Join(outside, "keep.txt"))
	require.NoError(t, err, "the user's directory behind the link was touched")
	assert.Equal(t, "the user's\n", string(data))
}

// What a checkpoint does not capture in a submodule's directory — files
// git ignores, empty directories, a repository's .git — keeps its
// gitlink, agrees with Status, and survives a restore; a repository the
// agent made there keeps its history.
func TestASubmodulesDirectoryKeepsWhatNoCheckpointHolds(t *testing.T) {
	t.Parallel()
	f, gitlink := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root
	f.write(h, "lib/secret.log", "ignored\n") // *.log is ignored
	require.NoError(t, os.MkdirAll(filepath.Join(root, "lib", "build"), 0o755))
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, gitlink, gitlinkAt(f, string(cp.ID), "lib"), "nothing captured there: the gitlink stays")

	f.git(filepath.Join(root, "lib"), "init", "-q")
	f.write(h, "lib/made.txt", "the agent's repository\n")
	f.git(filepath.Join(root, "lib"), "add", "made.txt")
	f.git(filepath.Join(root, "lib"), "commit", "-qm", "the agent's history")
	res, err := h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	require.NotNil(t, res.Safety)
	assert.Equal(t, "the agent's repository", f.git(f.repo, "show", string(res.Safety.ID)+":lib/made.txt"))
	assert.FileExists(t, filepath.Join(root, "lib", "secret.log"), "an ignored file is never removed")
	assert.Contains(t, f.git(filepath.Join(root, "lib"), "log", "--oneline"), "the agent's history", "nor a repository")
}

// A FIFO (or anything else) put where a submodule's directory was hangs
// no Status: it is a change, looked at without opening it.
func TestAFIFOForASubmoduleHangsNothing(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	h, err := f.ws.NewHead("agent").From("main").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	lib := filepath.Join(h.Info().Root, "lib")
	require.NoError(t, os.Remove(lib))
	mkfifo(t, lib)
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.Contains(t, st.Changes, grove.Change{Path: "lib", Kind: grove.ChangeModified})
	_, err = h.Restore(f.ctx, "main", &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	fi, err := os.Lstat(lib)
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
}

// A gitlink committed with no .gitmodules (git add of an embedded
// repository) is looked into by Status as by a checkpoint: work put
// there is a change, and is captured.
func TestAGitlinkWithoutGitmodulesIsLookedInto(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	commit := strings.TrimSpace(f.git(f.repo, "rev-parse", "HEAD"))
	f.git(f.repo, "update-index", "--add", "--cacheinfo", "160000,"+commit+",vendor/x")
	f.git(f.repo, "commit", "-qm", "an embedded repository")
	h := f.head("agent")
	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "%+v", st.Changes)
	f.write(h, "vendor/x/work.txt", "the agent's\n")
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.Contains(t, st.Changes, grove.Change{Path: "vendor/x", Kind: grove.ChangeModified})
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, "the agent's", f.git(f.repo, "show", string(cp.ID)+":vendor/x/work.txt"))
}

// No git add grove runs ever meets a gitlink whose directory holds a
// repository: git would run git status in it, with its own configuration
// (a clean filter it names would run). The agent stages its repository,
// whose filter marks every file, as a gitlink under an ignored directory
// that a checkpoint includes.
func TestAttackAFilterInARepositoryAtAGitlinkNeverRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	pwned := filepath.Join(t.TempDir(), "pwned")
	repo := filepath.Join(root, "ignored", "evil")
	f.writeFile(repo, "a.txt", "a\n")
	f.writeFile(repo, ".gitattributes", "* filter=evil\n")
	f.git(repo, "init", "-q")
	f.git(repo, "add", "-A")
	f.git(repo, "commit", "-qm", "evil")
	f.git(repo, "config", "filter.evil.clean", "touch "+pwned+"; cat")
	f.git(root, "add", "-f", "ignored/evil") // the gitlink, in the head's index
	f.write(h, "ignored/evil/a.txt", "changed\n")
	_, err := h.Checkpoint(f.ctx, &workspace.CheckpointOptions{Include: []string{"ignored"}})
	require.NoError(t, err)
	_, err = h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.NoFileExists(t, pwned, "the agent's filter ran")
}

// A restore keeps a file in a submodule's directory that is ignored now,
// even to a target whose rules no longer ignore it (the file is in no
// checkpoint), and fails for no path in one (git's check-ignore refuses
// a path inside a submodule).
func TestARestoreKeepsWhatIsIgnoredInASubmodulesDirectory(t *testing.T) {
	t.Parallel()
	f, _ := submoduleFixture(t)
	f.writeFile(f.repo, ".gitignore", "ignored/\n") // *.log no longer ignored
	f.git(f.repo, "commit", "-qam", "rules")
	f.git(f.repo, "tag", "newrules")
	h, err := f.ws.NewHead("agent").From("main~1").NoSubmodules().Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	f.write(h, "lib/secret.log", "ignored now\n")
	res, err := h.Restore(f.ctx, "newrules", nil)
	require.NoError(t, err)
	assert.Nil(t, res.Safety, "nothing to capture")
	assert.FileExists(t, filepath.Join(h.Info().Root, "lib", "secret.log"))

	// A checkpoint that captured files in lib, restored while lib holds
	// others: no error from git about paths in a submodule.
	f.write(h, "lib/work.txt", "work\n")
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	f.write(h, "lib/work.txt", "other work\n")
	_, err = h.Restore(f.ctx, grove.Rev(cp.ID), &workspace.RestoreOptions{Discard: true})
	require.NoError(t, err)
	assert.Equal(t, "work\n", readFile(t, h, "lib/work.txt"))
}
