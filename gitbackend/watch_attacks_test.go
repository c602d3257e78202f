package gitbackend_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// userGlobalConfig is a file of the user's outside the repository, in git
// configuration syntax: their own ~/.gitconfig.
const userGlobalConfig = "[user]\n\tname = The User\n[alias]\n\tco = checkout\n\tlg = log --graph\n[credential]\n\thelper = store\n"

// An agent without a sandbox adds to the shared repository's config an
// include of the user's own global configuration. The watch sees new
// command-bearing entries "in" that file; doctor --fix then "puts them
// back" by unsetting them from the user's ~/.gitconfig.
func TestAttackWatchRevertEditsAnIncludedUserFile(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
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
	require.Equal(t, userGlobalConfig, string(after), "grove doctor --fix rewrote the user's own file outside the repository")
	_, err = gitUser(f.ctx, f.repo, "config", "--get", "include.path")
	assert.Error(t, err, "the include is put back out")
}

// An agent without a sandbox replaces the shared repository's config with
// a symlink to the user's ~/.gitconfig (left as it is); the revert's git
// config --file follows the link and rewrites the user's file.
func TestAttackWatchRevertWritesThroughConfigSymlink(t *testing.T) {
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
	require.Equal(t, userGlobalConfig, string(after), "grove doctor --fix wrote through the symlink into the user's file")
}

// An agent without a sandbox replaces the shared repository's info/
// directory with a symlink to a directory of the user's. Every file there
// is a new "info" entry, and doctor --fix "puts back" each by removing it:
// the user's files are deleted.
func TestAttackWatchRevertDeletesThroughInfoSymlink(t *testing.T) {
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
	require.NotEmpty(t, changes)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	fi, err := os.Lstat(filepath.Join(common, "info"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "info/ is a directory again")

	_, err = os.Stat(filepath.Join(docs, "thesis.tex"))
	require.NoError(t, err, "grove doctor --fix deleted the user's file through the planted info/ symlink")
}

// An agent without a sandbox writes <common>/commondir: git reads it in
// any git dir, the main one too, and takes config, hooks, refs and objects
// from the directory it names. The agent's directory links the real refs
// and objects (so that nothing looks amiss) and has a config of its own
// with a core.fsmonitor. grove's own git names its common dir and is not
// fooled; but the watch records only <common>'s own files, so it reports
// nothing, doctor --fix puts nothing back, and the user's own git status in
// the main checkout runs the agent's command.
func TestAttackWatchMissesCommondirRedirect(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	common := commonOf(f)
	require.NoError(t, h.Watch(f.ctx))

	// The agent, with a shell.
	pwned := filepath.Join(t.TempDir(), "pwned")
	evil := filepath.Join(t.TempDir(), "evil")
	require.NoError(t, os.MkdirAll(evil, 0o755))
	for _, n := range []string{"objects", "refs", "packed-refs", "info", "worktrees"} {
		if _, err := os.Lstat(filepath.Join(common, n)); err == nil {
			require.NoError(t, os.Symlink(filepath.Join(common, n), filepath.Join(evil, n)))
		}
	}
	cfg, err := os.ReadFile(filepath.Join(common, "config"))
	require.NoError(t, err)
	cfg = append(cfg, []byte("[core]\n\tfsmonitor = \"touch "+pwned+"; false #\"\n")...)
	require.NoError(t, os.WriteFile(filepath.Join(evil, "config"), cfg, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(common, "commondir"), []byte(evil+"\n"), 0o644))

	changes, err := h.Tampered(f.ctx)
	require.NoError(t, err)
	require.NotEmpty(t, changes, "the watch saw nothing of the commondir redirect")
	_, err = h.EndWatch(f.ctx)
	require.NoError(t, err)
	_, err = f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)

	// The user's own git, after doctor --fix.
	f.git(f.repo, "status")
	_, statErr := os.Stat(pwned)
	require.Error(t, statErr, "the user's git status in the main checkout ran the agent's fsmonitor (watch saw %d changes)", len(changes))
}

// An agent without a sandbox includes, from the shared config, a file
// over the 16 MiB grove reads of a configuration file (padding, then a
// core.fsmonitor). git reads it; grove cannot: the watch reports the
// configuration as unreadable (it was blind to it, and silent), and
// doctor --fix puts the repository's configuration back whole.
func TestAttackWatchBlindedByAnOversizedInclude(t *testing.T) {
	f := newFixture(t)
	h := f.head("agent")
	require.NoError(t, h.Watch(f.ctx))

	pwned := filepath.Join(t.TempDir(), "pwned")
	big := filepath.Join(t.TempDir(), "big.cfg")
	pad := make([]byte, 0, 17<<20)
	line := []byte("# padding padding padding padding padding padding padding padding padding\n")
	for len(pad) < 17<<20 {
		pad = append(pad, line...)
	}
	pad = append(pad, []byte("[core]\n\tfsmonitor = \"touch "+pwned+"; false #\"\n")...)
	require.NoError(t, os.WriteFile(big, pad, 0o644))
	f.git(h.Info().Root, "config", "include.path", big)

	changes, err := h.Tampered(f.ctx)
	require.NoError(t, err, "the watch is blinded")
	assert.NotEmpty(t, changes)
	_, err = h.EndWatch(f.ctx)
	require.NoError(t, err)
	rep, err := f.ws.Reconcile(f.ctx, &workspace.ReconcileOptions{Fix: true})
	require.NoError(t, err)
	tampered := 0
	for _, fd := range rep.Findings {
		if fd.Kind == grove.FindingTampered {
			tampered++
			assert.True(t, fd.Fixed, "%+v", fd)
		}
	}
	assert.Positive(t, tampered)
	f.git(f.repo, "status")
	assert.NoFileExists(t, pwned, "the user's git status ran the agent's fsmonitor after doctor --fix")
}
