package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command under grove run read GROVE_DATABASE, GROVE_REMOTE and
// GROVE_MCP_TOKEN from /proc/$PPID/environ: grove's own environment; the
// same holds for grove fanout's commands, and GROVE_UI_TOKEN. It
// must see none of them, neither in its own environment nor in grove's.
// The check runs as a user who is not root (root reads every process's
// /proc files): on CI, nobody. (The command runs in a user namespace of
// its own, which already keeps it from grove's /proc files; where the
// kernel refuses one, grove's process being non-dumpable does.)
func TestAGroveRunCommandReadsNoneOfGrovesSecrets(t *testing.T) {
	dir, err := os.MkdirTemp("", "grove-secrets-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "grove")
	data, err := os.ReadFile(groveBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644))

	as := func(args ...string) *exec.Cmd {
		if os.Geteuid() == 0 {
			args = append([]string{"runuser", "-u", "nobody", "--"}, args...)
		}
		c := exec.Command(args[0], args[1:]...)
		c.Dir = repo
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GROVE_HOME=" + filepath.Join(dir, "home"),
			"GROVE_DATABASE=" + filepath.Join(dir, "hunter2-db.sqlite"), "GROVE_MCP_TOKEN=sk-do-not-leak", "GROVE_UI_TOKEN=ui-do-not-leak-0123456789",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x"}
		return c
	}
	if os.Geteuid() == 0 {
		require.NoError(t, exec.Command("chown", "-R", "nobody", dir).Run())
		require.NoError(t, os.Chmod(dir, 0o755))
	}
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main"}, {"git", "add", "."}, {"git", "commit", "-qm", "base"}, {bin, "new", "h"}} {
		out, err := as(args...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	probe := `env; for f in /proc/[0-9]*/environ /proc/[0-9]*/mem; do tr '\0' '\n' < "$f" 2>/dev/null; done; echo probe-done`
	// grove run, and grove fanout's commands, which run in goroutines of
	// one grove process.
	for _, cmd := range [][]string{{"run", "h"}, {"fanout", "2", "fan"}} {
		out, err := as(append(append([]string{bin}, cmd...), "--", "sh", "-c", probe)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "probe-done")
		for _, secret := range []string{"hunter2", "sk-do-not-leak", "ui-do-not-leak"} {
			assert.False(t, strings.Contains(string(out), secret), "grove %s: the command read %s", cmd[0], secret)
		}
	}
}
