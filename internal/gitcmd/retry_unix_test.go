//go:build unix

package gitcmd_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
)

// flakyGit is a stand-in for git that fails a command the first `fails`
// times with what git says when a concurrent prune took an object
// directory from under it (a race that cannot be caused on demand), then
// runs the real git.
func flakyGit(t *testing.T, fails int) (string, func() int) {
	t.Helper()
	real, err := exec.LookPath("git")
	require.NoError(t, err)
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := `#!/bin/sh
for a in "$@"; do
  if [ "$a" = hash-object ]; then
    n=$(cat ` + count + ` 2>/dev/null || echo 0); n=$((n+1)); echo $n > ` + count + `
    if [ $n -le ` + strconv.Itoa(fails) + ` ]; then
      echo "error: unable to create temporary file: No such file or directory" >&2
      echo "fatal: unable to add stdin to database" >&2
      exit 128
    fi
  fi
done
exec ` + real + ` "$@"
`
	fake := filepath.Join(dir, "git")
	require.NoError(t, os.WriteFile(fake, []byte(script), 0o755))
	return fake, func() int {
		data, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
}

// A command that fails because the object store changed under it is run
// again (its input read again), and succeeds.
func TestATransientObjectStoreFailureIsRetried(t *testing.T) {
	isolateHome(t)
	fake, calls := flakyGit(t, 2)
	r, err := gitcmd.New(context.Background(), gitcmd.Options{Git: fake})
	require.NoError(t, err)
	dir := initRepo(t, newRunner(t))
	before := gitcmd.TransientRetries()
	out, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"),
		Args: []string{"hash-object", "-w", "--stdin"}, Stdin: strings.NewReader("hello\n")})
	require.NoError(t, err)
	assert.Equal(t, "ce013625030ba8dba906f756967f9e9ca394464a", out, "the rerun read the whole input again")
	assert.Equal(t, 3, calls())
	assert.Equal(t, int64(2), gitcmd.TransientRetries()-before)
}

// One that keeps failing so is Busy, never Internal: a retryable code
// that names the cause.
func TestAPersistentObjectStoreFailureIsBusy(t *testing.T) {
	isolateHome(t)
	fake, calls := flakyGit(t, 100)
	r, err := gitcmd.New(context.Background(), gitcmd.Options{Git: fake})
	require.NoError(t, err)
	dir := initRepo(t, newRunner(t))
	_, err = r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"),
		Args: []string{"hash-object", "-w", "--stdin"}, Stdin: strings.NewReader("hello\n")})
	assert.Equal(t, grove.Busy, grove.CodeOf(err), "%v", err)
	assert.False(t, errors.Is(err, grove.ErrInternal), "Busy, and only Busy")
	assert.ErrorContains(t, err, "objects changed under git")
	assert.ErrorContains(t, err, "unable to create temporary file", "git's own words are kept")
	assert.Equal(t, 5, calls())
}
