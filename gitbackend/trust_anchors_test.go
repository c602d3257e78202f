package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// evilProject writes a directory holding an agent's .grove.toml.
func evilProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".grove.toml"), []byte("[setup]\ncommand = \"touch /tmp/pwned\"\n"), 0o644))
	return dir
}

// The main checkout of a repository whose git dir is not a checkout's .git
// was found through git, which honours core.worktree: an agent that set
// core.bare=false and core.worktree to a directory of its own chose the
// project file the user's next grove command reads.
func TestCoreWorktreeNeverChoosesTheProjectFile(t *testing.T) {
	f := newFixture(t)
	evil := evilProject(t)

	t.Run("a bare repository", func(t *testing.T) {
		bare := filepath.Join(t.TempDir(), "bare.git")
		f.git(filepath.Dir(bare), "clone", "-q", "--bare", f.repo, bare)
		f.git(bare, "config", "core.bare", "false")
		f.git(bare, "config", "core.worktree", evil)
		for _, anchors := range []string{"", t.TempDir()} {
			b := gitbackend.New(gitbackend.Options{Anchors: anchors})
			_, err := b.ProjectFile(f.ctx, bare, ".grove.toml")
			assert.Equal(t, grove.NotFound, grove.CodeOf(err), "anchors %q: %v", anchors, err)
		}
	})

	t.Run("a separate git dir", func(t *testing.T) {
		checkout := filepath.Join(t.TempDir(), "proj")
		gitDir := filepath.Join(t.TempDir(), "proj.git")
		f.git(filepath.Dir(checkout), "clone", "-q", "--separate-git-dir", gitDir, f.repo, checkout)
		require.NoError(t, os.WriteFile(filepath.Join(checkout, ".grove.toml"), []byte("# the user's\n"), 0o644))
		anchors := t.TempDir()
		b := gitbackend.New(gitbackend.Options{Anchors: anchors})
		// The user opens it from the checkout once: the checkout is its own.
		data, err := b.ProjectFile(f.ctx, checkout, ".grove.toml")
		require.NoError(t, err)
		assert.Equal(t, "# the user's\n", string(data))
		// The agent points core.worktree elsewhere.
		f.git(gitDir, "config", "core.worktree", evil)
		for _, locator := range []string{checkout, gitDir} {
			data, err := b.ProjectFile(f.ctx, locator, ".grove.toml")
			require.NoError(t, err, locator)
			assert.Equal(t, "# the user's\n", string(data), "opened from %s", locator)
		}
		// Without a record, from the git dir, there is no main checkout.
		_, err = gitbackend.New(gitbackend.Options{}).ProjectFile(f.ctx, gitDir, ".grove.toml")
		assert.Equal(t, grove.NotFound, grove.CodeOf(err), "%v", err)
	})
}

// A grove command run inside a head found its repository through the
// head's .git file: an agent that pointed it at a repository of its own
// (inside the shared git dir, with a .grove.toml committed) had the user's
// grove new there run its setup, and grove ls there list nothing.
func TestAGroveCommandInAHeadOpensTheHeadsRepository(t *testing.T) {
	f := newFixture(t)
	anchors := t.TempDir()
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{Anchors: anchors}), f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	custom := filepath.Join(t.TempDir(), "elsewhere") // not in the default heads directory
	h, err := ws.NewHead("agent").From("main").Dir(custom).Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	root := h.Info().Root

	evil := filepath.Join(commonOf(f), "grove", "evil")
	f.git(filepath.Dir(evil), "init", "-q", evil)
	require.NoError(t, os.WriteFile(filepath.Join(evil, ".grove.toml"), []byte("[setup]\ncommand = \"touch /tmp/pwned\"\n"), 0o644))
	f.git(evil, "add", ".grove.toml")
	f.git(evil, "commit", "-qm", "evil")
	require.NoError(t, os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: "+filepath.Join(evil, ".git")+"\n"), 0o644))
	// git itself now takes the head for the agent's repository.
	top, err := githarness.Git(f.ctx, root, "rev-parse", "--git-dir")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(evil, ".git"), top)

	// With the record: the head's own repository, its heads, its project
	// file (none here).
	b := gitbackend.New(gitbackend.Options{Anchors: anchors})
	in, err := workspace.Open(f.ctx, b, filepath.Join(root, "src"), nil)
	require.NoError(t, err)
	defer in.Close()
	assert.Equal(t, commonOf(f), in.Info().Locator)
	heads, err := in.Heads(f.ctx)
	require.NoError(t, err)
	require.Len(t, heads, 1)
	assert.Equal(t, "agent", heads[0].Name)
	_, err = b.ProjectFile(f.ctx, root, ".grove.toml")
	assert.Equal(t, grove.NotFound, grove.CodeOf(err), "%v", err)

	// Without one: refused, never the agent's repository.
	_, err = workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), root, nil)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	_, err = gitbackend.New(gitbackend.Options{}).ProjectFile(f.ctx, root, ".grove.toml")
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
}
