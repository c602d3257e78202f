package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The project's .grove.toml says [sandbox] kind = "bwrap". `grove run NAME
// --session ID` run from outside the repository once resumed the session
// with no sandbox (the .grove.toml of the directory it ran in, none, was
// the one read), and the command ran on the host, reading what the sandbox
// hides. The session's own project decides.
func TestAResumedRunFromOutsideTheRepositoryIsSandboxedAsItsProjectSays(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".grove.toml"), []byte("[sandbox]\nkind = \"bwrap\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README.md"), []byte("hi\n"), 0o644))
	secret := filepath.Join(dir, "host-secret")
	require.NoError(t, os.WriteFile(secret, []byte("HOST SECRET"), 0o600))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GROVE_HOME=" + filepath.Join(dir, "home"),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=u", "GIT_AUTHOR_EMAIL=u@x", "GIT_COMMITTER_NAME=u", "GIT_COMMITTER_EMAIL=u@x"}
	run := func(in string, args ...string) string {
		c := exec.Command(args[0], args[1:]...)
		c.Dir, c.Env = in, env
		out, err := c.CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
		return string(out)
	}
	run(repo, "git", "init", "-q", "-b", "main")
	run(repo, "git", "add", ".")
	run(repo, "git", "commit", "-qm", "base")
	run(repo, groveBin, "new", "h")
	inRepo := run(repo, groveBin, "run", "h", "--", "sh", "-c", "cat "+secret+" 2>&1; true")
	require.NotContains(t, inRepo, "HOST SECRET", "sandboxed from the repository")
	id := strings.TrimSpace(run(repo, groveBin, "session", "start", "h", "--agent", "a"))

	elsewhere := t.TempDir()
	out := run(elsewhere, groveBin, "run", "h", "--session", id, "--", "sh", "-c", "cat "+secret+" 2>&1; true")
	require.NotContains(t, out, "HOST SECRET", "the resumed run ignored the project's [sandbox] and ran on the host")
}
