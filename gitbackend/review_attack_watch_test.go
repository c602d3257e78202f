package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/workspace"
)

// userGlobalConfig is a file of the user's outside the repository, in git
// configuration syntax: their own ~/.gitconfig.
const userGlobalConfig = "[user]\n\tname = The User\n[alias]\n\tco = checkout\n\tlg = log --graph\n[credential]\n\thelper = store\n"

// An agent without a sandbox adds to the shared repository's config an
// include of the user's own global configuration. The watch sees new
// command-bearing entries "in" that file; doctor --fix then "puts them
// back" by unsetting them from the user's ~/.gitconfig.
func TestReviewAttackWatchRevertEditsAnIncludedUserFile(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	common := commonOf(f)
	userCfg := filepath.Join(t.TempDir(), ".gitconfig")
	require.NoError(t, os.WriteFile(userCfg, []byte(userGlobalConfig), 0o644))
	require.NoError(t, h.Watch(f.ctx))

	// The agent, with a shell in its head.
	f.git(h.Info().Root, "config", "include.path", userCfg)

	_, err := h.EndWatch(f.ctx)
	require.NoError(t, err)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)

	after, err := os.ReadFile(userCfg)
	require.NoError(t, err)
	cfg, _ := os.ReadFile(filepath.Join(common, "config"))
	t.Logf("shared config after fix:\n%s", cfg)
	t.Logf("user's file after fix:\n%s", after)
	require.Equal(t, userGlobalConfig, string(after), "grove doctor --fix rewrote the user's own file outside the repository")
}

// An agent without a sandbox replaces the shared repository's config with
// a symlink to the user's ~/.gitconfig (left as it is); the revert's git
// config --file follows the link and rewrites the user's file.
func TestReviewAttackWatchRevertWritesThroughConfigSymlink(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	common := commonOf(f)
	f.git(f.repo, "config", "alias.st", "status")
	userCfg := filepath.Join(t.TempDir(), ".gitconfig")
	require.NoError(t, os.WriteFile(userCfg, []byte(userGlobalConfig), 0o644))
	require.NoError(t, h.Watch(f.ctx))

	// The agent: the repository's config becomes a link to the user's file.
	require.NoError(t, os.Remove(filepath.Join(common, "config")))
	require.NoError(t, os.Symlink(userCfg, filepath.Join(common, "config")))

	_, err := h.EndWatch(f.ctx)
	require.NoError(t, err)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)

	after, err := os.ReadFile(userCfg)
	require.NoError(t, err)
	t.Logf("user's file after fix:\n%s", after)
	require.Equal(t, userGlobalConfig, string(after), "grove doctor --fix wrote through the symlink into the user's file")
}

// An agent without a sandbox replaces the shared repository's info/
// directory with a symlink to a directory of the user's. Every file there
// is a new "info" entry, and doctor --fix "puts back" each by removing it:
// the user's files are deleted.
func TestReviewAttackWatchRevertDeletesThroughInfoSymlink(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	common := commonOf(f)
	docs := filepath.Join(t.TempDir(), "Documents")
	require.NoError(t, os.MkdirAll(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "thesis.tex"), []byte("years of work\n"), 0o644))
	require.NoError(t, h.Watch(f.ctx))

	// The agent.
	require.NoError(t, os.RemoveAll(filepath.Join(common, "info")))
	require.NoError(t, os.Symlink(docs, filepath.Join(common, "info")))

	changes, err := h.EndWatch(f.ctx)
	require.NoError(t, err)
	t.Logf("watch saw: %+v", changes)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	t.Logf("reconcile: %v", err)

	_, err = os.Stat(filepath.Join(docs, "thesis.tex"))
	require.NoError(t, err, "grove doctor --fix deleted the user's file through the planted info/ symlink")
}
