package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// A locator inside a head finds its repository through the head's .git
// file, which the agent in the head can rewrite. Opening a workspace there
// must reach the real repository or fail: never a repository the agent
// made, in its head or anywhere else.
func TestALocatorInAHeadIsNotRedirectedByItsGitFile(t *testing.T) {
	f := newFixture(t)
	h := f.head("victim")
	root := h.Info().Root
	require.NoError(t, h.Close())

	// Honest: from inside the head, the real repository.
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), filepath.Join(root, "src"), nil)
	require.NoError(t, err)
	assert.Equal(t, f.ws.Info().ID, ws.Info().ID)
	require.NoError(t, ws.Close())

	gitFile := filepath.Join(root, ".git")
	honest, err := os.ReadFile(gitFile)
	require.NoError(t, err)
	restore := func() {
		require.NoError(t, os.RemoveAll(gitFile))
		require.NoError(t, os.WriteFile(gitFile, honest, 0o644))
	}

	attacks := map[string]func(){
		// A repository of the agent's own, in the head.
		"a fake repository in the head": func() {
			evil := filepath.Join(root, ".evil")
			f.git(root, "init", "-q", "--bare", evil)
			f.git(root, "--git-dir="+evil, "config", "core.bare", "false")
			f.git(root, "--git-dir="+evil, "config", "core.worktree", filepath.Join(t.TempDir(), "victim"))
			require.NoError(t, os.WriteFile(gitFile, []byte("gitdir: "+evil+"\n"), 0o644))
		},
		// The same, dressed as a linked worktree of it, with the back-link.
		"a fake worktree entry in the head": func() {
			evil := filepath.Join(root, ".evil2")
			f.git(root, "init", "-q", "--bare", evil)
			wt := filepath.Join(evil, "worktrees", "x")
			require.NoError(t, os.MkdirAll(wt, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(wt, "gitdir"), []byte(gitFile+"\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(wt, "commondir"), []byte("../..\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(wt, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
			require.NoError(t, os.WriteFile(gitFile, []byte("gitdir: "+wt+"\n"), 0o644))
		},
		// The .git file replaced by a whole repository of the agent's.
		"a repository in place of the .git file": func() {
			require.NoError(t, os.Remove(gitFile))
			f.git(root, "init", "-q")
		},
		// A bare repository of the agent's, even outside the head.
		"a bare repository named by the .git file": func() {
			evil := filepath.Join(t.TempDir(), "evil.git")
			f.git(root, "clone", "-q", "--bare", f.repo, evil)
			require.NoError(t, os.WriteFile(gitFile, []byte("gitdir: "+evil+"\n"), 0o644))
		},
		// Another head's worktree entry of the real repository: the
		// back-link names the other head.
		"another head's worktree entry": func() {
			other := f.head("other")
			otherGit, err := os.ReadFile(filepath.Join(other.Info().Root, ".git"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(gitFile, otherGit, 0o644))
		},
	}
	for name, plant := range attacks {
		t.Run(name, func(t *testing.T) {
			defer restore()
			plant()
			ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), root, nil)
			if err == nil {
				defer ws.Close()
				assert.Equal(t, f.ws.Info().ID, ws.Info().ID, "the workspace opened from the head is not the real one")
				return
			}
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "error: %v", err)
			assert.Contains(t, err.Error(), ".git")
		})
	}
	// Repositories the agent makes inside its head, opened from there.
	for name, make := range map[string]func() string{
		"a nested repository": func() string {
			inner := filepath.Join(root, "src", "inner")
			f.git(root, "clone", "-q", f.repo, inner)
			return filepath.Join(inner, "src")
		},
		"a nested bare repository": func() string {
			bare := filepath.Join(root, "sub.git")
			f.git(root, "clone", "-q", "--bare", f.repo, bare)
			return bare
		},
	} {
		t.Run(name, func(t *testing.T) {
			ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), make(), nil)
			if err == nil {
				_ = ws.Close()
			}
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "error: %v", err)
		})
	}

	// The real repository and its heads are unharmed.
	entries, err := os.ReadDir(filepath.Dir(root))
	require.NoError(t, err)
	for _, e := range entries {
		assert.Contains(t, []string{"victim", "other"}, e.Name(), "something was made beside the heads")
	}
}

// Materialize into a path inside a head is refused even when a symlink the
// agent planted there leads out of it: the write would land where the
// agent chose.
func TestMaterializeThroughASymlinkInAHeadIsRefused(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	require.NoError(t, os.Symlink(out, filepath.Join(h.Info().Root, "snap")))
	require.NoError(t, os.Symlink(filepath.Dir(out), filepath.Join(h.Info().Root, "par")))
	for _, dir := range []string{filepath.Join(h.Info().Root, "snap"), filepath.Join(h.Info().Root, "par", "x")} {
		err := f.ws.Materialize(f.ctx, "main", dir)
		assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%s: %v", dir, err)
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written through the symlink")
	_, err = os.Stat(filepath.Join(filepath.Dir(out), "x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A bare repository, or a locator inside a git dir, is opened even when it
// lies inside another repository's working tree: no .git file leads there.
func TestABareRepositoryInsideACheckoutOpens(t *testing.T) {
	f := newFixture(t)
	bare := filepath.Join(f.repo, "remotes", "origin.git")
	f.git(f.repo, "clone", "-q", "--bare", f.repo, bare)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), bare, nil)
	require.NoError(t, err)
	require.NoError(t, ws.Close())
	ws, err = workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), filepath.Join(f.repo, ".git"), nil)
	require.NoError(t, err)
	assert.Equal(t, f.ws.Info().ID, ws.Info().ID, "the git dir opens its own repository")
	require.NoError(t, ws.Close())
}

// An agent that sets core.bare in the repository's config (from its head)
// does not move new heads into the main checkout: the layout, a git dir
// named .git, says where the working tree is.
func TestCoreBareSetByAnAgentDoesNotMoveTheHeads(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	f.git(h.Info().Root, "config", "core.bare", "true")
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	if err != nil {
		assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "error: %v", err)
		return
	}
	defer ws.Close()
	nh, err := ws.NewHead("next").Create(f.ctx)
	require.NoError(t, err)
	defer nh.Close()
	assert.Equal(t, filepath.Dir(h.Info().Root), filepath.Dir(nh.Info().Root), "the new head is beside the others")
	assert.NotContains(t, nh.Info().Root, f.repo+string(filepath.Separator))
}

// A head of a bare repository, or of a checkout whose git dir is kept
// elsewhere, whose .git the agent replaced with a repository of its own, is
// recognized as the head it is.
func TestAReplacedHeadOfABareOrSeparateRepositoryIsRecognized(t *testing.T) {
	f := newFixture(t)
	for name, make := range map[string]func(dir string) string{
		"bare": func(dir string) string {
			bare := filepath.Join(dir, "bare.git")
			f.git(dir, "clone", "-q", "--bare", f.repo, bare)
			return bare
		},
		"separate git dir": func(dir string) string {
			wt := filepath.Join(dir, "wt")
			f.git(dir, "clone", "-q", "--separate-git-dir", filepath.Join(dir, "gitdir"), f.repo, wt)
			return wt
		},
	} {
		t.Run(name, func(t *testing.T) {
			locator := make(t.TempDir())
			ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), locator, nil)
			require.NoError(t, err)
			defer ws.Close()
			h, err := ws.NewHead("agent").Create(f.ctx)
			require.NoError(t, err)
			root := h.Info().Root
			require.NoError(t, h.Close())
			require.NoError(t, os.Remove(filepath.Join(root, ".git")))
			f.git(root, "init", "-q")
			_, err = workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), root, nil)
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "error: %v", err)
		})
	}
}

// A repository git refuses to open (here: an extension it does not know,
// which an agent can set from its head) is FailedPrecondition with git's
// whole reason, not "not a repository".
func TestARepositoryGitRefusesSaysWhy(t *testing.T) {
	f := newFixture(t)
	f.git(f.repo, "config", "core.repositoryformatversion", "1")
	f.git(f.repo, "config", "extensions.evil", "x")
	_, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "error: %v", err)
	assert.Contains(t, err.Error(), "evil")
	_, err = workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), t.TempDir(), nil)
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "error: %v", err)
	assert.Contains(t, err.Error(), "not a git repository")
}
