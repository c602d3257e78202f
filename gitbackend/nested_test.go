package gitbackend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scaffolding tools run git init in a subdirectory: a nested repository's
// files are the agent's work. A checkpoint captures them as files (never a
// bare gitlink), honouring the head's and the nested repository's ignore
// rules; an empty nested repository never fails a checkpoint; the files
// survive destroy-and-fork; the nested git dir itself is never captured
// and never removed by a restore.
func TestNestedRepositoriesAreCapturedAsFiles(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	f.write(h, "app/main.go", "package app\n")
	f.write(h, "app/lib/util.go", "package lib\n")
	f.write(h, "app/build.log", "ignored by the head\n")
	f.write(h, "app/.gitignore", "dist/\n")
	f.write(h, "app/dist/out.js", "ignored by the nested repository\n")
	f.git(filepath.Join(root, "app"), "init", "-q")
	f.git(filepath.Join(root, "app"), "add", "main.go")
	f.git(filepath.Join(root, "app"), "commit", "-qm", "scaffold")
	f.write(h, "deep/er/tool/x.txt", "x\n")
	f.git(filepath.Join(root, "deep/er/tool"), "init", "-q") // no commit
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty-repo"), 0o755))
	f.git(filepath.Join(root, "empty-repo"), "init", "-q") // no files at all

	st, err := h.Status(f.ctx)
	require.NoError(t, err)
	assert.True(t, st.Dirty)
	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err, "a checkpoint with nested repositories")
	files := strings.Split(f.git(root, "ls-tree", "-r", "--name-only", string(cp.ID)), "\n")
	assert.Subset(t, files, []string{"app/main.go", "app/lib/util.go", "app/.gitignore", "deep/er/tool/x.txt"})
	for _, name := range files {
		assert.NotContains(t, name, ".git/", "a nested git dir was captured")
		assert.NotEqual(t, "app/build.log", name, "an ignored file was captured")
		assert.NotEqual(t, "app/dist/out.js", name, "a file the nested repository ignores was captured")
	}
	modes := f.git(root, "ls-tree", "-r", string(cp.ID))
	assert.NotContains(t, modes, "160000", "a nested repository was stored as a gitlink")
	assert.Empty(t, f.git(root, "status", "--porcelain", "--ignored=no", "--", "app", "deep"), "the head's index matches the checkpoint")
	st, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "a clean head with an empty nested repository is not dirty: %+v", st.Changes)

	// Later edits inside the nested repository are captured too.
	f.write(h, "app/main.go", "package app // v2\n")
	f.write(h, "app/new.go", "package app\n")
	cp2, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	assert.True(t, cp2.New)
	assert.Equal(t, "package app // v2", f.git(root, "show", string(cp2.ID)+":app/main.go"))
	assert.Equal(t, "package app", f.git(root, "show", string(cp2.ID)+":app/new.go"))

	// Restore to before the nested files existed: they go, the nested
	// git dirs stay (git clean never removes a repository).
	_, err = h.Restore(f.ctx, "main", nil)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "app", "lib", "util.go"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Join(root, "app", ".git", "HEAD"))
	assert.NoError(t, err, "restore removed a nested repository's git dir")
	_, err = h.Restore(f.ctx, grove.Rev(cp2.ID), nil)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "app", "new.go"))
	require.NoError(t, err)
	assert.Equal(t, "package app\n", string(data))

	// A fork has the nested files; the source's destroy loses none of them.
	fork, err := h.Fork(f.ctx, "fork", nil)
	require.NoError(t, err)
	defer fork.Close()
	data, err = os.ReadFile(filepath.Join(fork.Info().Root, "app", "lib", "util.go"))
	require.NoError(t, err)
	assert.Equal(t, "package lib\n", string(data))
	_, err = h.Destroy(f.ctx, nil)
	require.NoError(t, err)
}

// The walk of a nested repository's files follows no symlink: a link in
// it to a directory outside the head is captured as the link, and nothing
// of what it leads to is read or captured.
func TestANestedRepositorysSymlinkOutIsCapturedAsALinkOnly(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	outside, unchanged := outsideTree(t)
	f.write(h, "app/main.go", "package app\n")
	f.git(filepath.Join(root, "app"), "init", "-q")
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "app", "out")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "app", "secret")))

	cp, err := h.Checkpoint(f.ctx, nil)
	require.NoError(t, err)
	files := f.git(root, "ls-tree", "-r", string(cp.ID), "--", "app")
	assert.Contains(t, files, "app/main.go")
	assert.Regexp(t, `(?m)^120000 blob \S+\tapp/out$`, files, "the link is captured as a link")
	assert.Regexp(t, `(?m)^120000 blob \S+\tapp/secret$`, files)
	assert.NotContains(t, files, "app/out/", "the walk followed a symlink out of the head")
	unchanged()
}

// nestedRepoWithFilter makes a nested repository "sub" in the head at root,
// with one committed file that its .gitattributes sends through filter
// "q" (which the caller defines in sub's configuration), and returns it.
func nestedRepoWithFilter(t *testing.T, f *fixture, root string) string {
	t.Helper()
	sub := filepath.Join(root, "sub")
	f.git(root, "init", "-q", "sub")
	f.git(sub, "config", "user.email", "a@b")
	f.git(sub, "config", "user.name", "a")
	require.NoError(t, os.WriteFile(filepath.Join(sub, ".gitattributes"), []byte("* filter=q\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "a"), []byte("a\n"), 0o644))
	f.git(sub, "add", "-A")
	f.git(sub, "commit", "-qm", "nested")
	return sub
}

// TestStatusNeverRunsGitInANestedRepository: the agent stages a nested
// repository as a gitlink in the head's index (git add sub). git status
// and git diff would run git inside it, with the nested repository's own
// configuration, which grove has not read; grove tells them not to.
func TestStatusNeverRunsGitInANestedRepository(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	root := h.Info().Root
	markers := t.TempDir()
	script := markerScript(t, t.TempDir(), markers, "pwned", 0)
	sub := nestedRepoWithFilter(t, f, root)
	f.git(sub, "config", "filter.q.clean", script)
	f.git(root, "add", "sub") // a gitlink in the head's index
	old := time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)
	stale := func() { require.NoError(t, os.Chtimes(filepath.Join(sub, "a"), old, old)); old = old.Add(time.Hour) }

	// Control: plain git status in the head runs the nested filter.
	stale()
	_, err := gitUser(f.ctx, root, "status", "--porcelain")
	require.NoError(t, err)
	require.Contains(t, markersIn(t, markers), "pwned", "plain git status does not run it, so this test could not fail")
	require.NoError(t, os.Remove(filepath.Join(markers, "pwned")))

	stale()
	_, err = h.Status(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, markersIn(t, markers), "grove's status ran a filter named in the nested repository's config")
	stale()
	_, err = h.Diff(f.ctx, "main", grove.Live)
	require.NoError(t, err)
	assert.Empty(t, markersIn(t, markers), "grove's diff ran a filter named in the nested repository's config")
}
