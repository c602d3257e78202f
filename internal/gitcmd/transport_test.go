package gitcmd_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/internal/gitcmd"
)

// No git command grove runs connects anywhere, whatever the repository's
// configuration allows: a per-scheme protocol.<name>.allow an agent set
// outranks protocol.allow=never, so in a partial clone git's lazy fetch of
// a missing object would run the agent's uploadpack (or an ext:: URL's
// command). git 2.39.4 and later also stop the lazy fetch
// (GIT_NO_LAZY_FETCH); the runner here runs a git that ignores it, as
// the older gits grove accepts do.
func TestNoCommandConnectsWhateverTheRepositoryAllows(t *testing.T) {
	isolateHome(t)
	ctx := context.Background()
	tmp := t.TempDir()
	plain := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=x", "GIT_AUTHOR_EMAIL=x@x", "GIT_COMMITTER_NAME=x", "GIT_COMMITTER_EMAIL=x@x")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	server := filepath.Join(tmp, "server")
	plain(tmp, "init", "-q", "-b", "main", server)
	require.NoError(t, os.WriteFile(filepath.Join(server, "a.txt"), []byte("a\n"), 0o644))
	plain(server, "add", "a.txt")
	plain(server, "commit", "-qm", "one")
	plain(server, "config", "uploadpack.allowFilter", "true")
	clone := filepath.Join(tmp, "clone")
	plain(tmp, "clone", "-q", "--filter=blob:none", "--no-checkout", "file://"+server, clone)
	missing := plain(clone, "rev-parse", "HEAD:a.txt")

	old := filepath.Join(tmp, "old-git") // a git with no GIT_NO_LAZY_FETCH
	require.NoError(t, os.WriteFile(old, []byte("#!/bin/sh\nunset GIT_NO_LAZY_FETCH\nexec git \"$@\"\n"), 0o755))
	r, err := gitcmd.New(ctx, gitcmd.Options{Git: old})
	require.NoError(t, err)
	for _, tc := range []struct{ name, scheme, url string }{
		{"an uploadpack command", "file", "file://" + server},
		{"an ext:: URL", "ext", "ext::sh -c touch% " + filepath.Join(tmp, "pwned-ext")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pwned := filepath.Join(tmp, "pwned-"+tc.scheme)
			plain(clone, "config", "remote.origin.url", tc.url)
			plain(clone, "config", "remote.origin.uploadpack", "touch "+pwned+"; exit 1") // fetches nothing
			plain(clone, "config", "protocol."+tc.scheme+".allow", "always")

			// Control: git with protocol.allow=never on its command line
			// runs the agent's command all the same.
			cmd := exec.Command(old, "-c", "protocol.allow=never", "cat-file", "-p", missing)
			cmd.Dir = clone
			_ = cmd.Run()
			require.FileExists(t, pwned, "the attack did not work on plain git: the test could not fail")
			require.NoError(t, os.Remove(pwned))

			_, err := r.Output(ctx, gitcmd.Cmd{GitDir: filepath.Join(clone, ".git"), Dir: clone, Args: []string{"cat-file", "-p", missing}})
			assert.Error(t, err)
			assert.NoFileExists(t, pwned, "grove's git ran the command the repository's configuration names")
		})
	}
}
