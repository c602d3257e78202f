package gitcmd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/gitcmd"
)

// isolateHome points HOME and XDG_CONFIG_HOME at an empty directory, as on a
// fresh machine with no user.name.
func isolateHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	return home
}

func newRunner(t *testing.T) *gitcmd.Runner {
	t.Helper()
	r, err := gitcmd.New(context.Background(), gitcmd.Options{})
	require.NoError(t, err)
	return r
}

// initRepo makes a repository with one commit, through the runner.
func initRepo(t *testing.T, r *gitcmd.Runner) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	_, err := r.Run(ctx, gitcmd.Cmd{Dir: dir, Discover: true, Args: []string{"init", "-q", "-b", "main"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	_, err = r.Run(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"add", "-A"}})
	require.NoError(t, err)
	_, err = r.Run(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"commit", "-q", "-m", "first"}})
	require.NoError(t, err)
	return dir
}

func TestParseVersion(t *testing.T) {
	for out, want := range map[string]gitcmd.Version{
		"git version 2.39.5\n":               {2, 39, 5},
		"git version 2.36.0.windows.1":       {2, 36, 0},
		"git version 2.45.1 (Apple Git-150)": {2, 45, 1},
		"git version 3.0":                    {3, 0, 0},
	} {
		v, err := gitcmd.ParseVersion(out)
		require.NoError(t, err, out)
		assert.Equal(t, want, v, out)
	}
	_, err := gitcmd.ParseVersion("hub version 1")
	assert.Error(t, err)
	assert.True(t, gitcmd.Version{2, 35, 9}.Less(gitcmd.MinVersion))
	assert.False(t, gitcmd.Version{2, 36, 0}.Less(gitcmd.MinVersion))
}

// An old git cannot be installed here, so a script that answers `git
// version` like one stands in for it: a fault that cannot be caused for real.
func TestNewRefusesGitOlderThanTheMinimum(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "git")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'git version 2.30.2'\n"), 0o755))
	_, err := gitcmd.New(context.Background(), gitcmd.Options{Git: fake})
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	assert.ErrorContains(t, err, "older than 2.36.0")

	_, err = gitcmd.New(context.Background(), gitcmd.Options{Git: filepath.Join(dir, "no-such-git")})
	assert.Equal(t, grove.BackendUnavailable, grove.CodeOf(err), "%v", err)
}

func TestCommitsWorkWithNoUserConfigured(t *testing.T) {
	isolateHome(t)
	r := newRunner(t)
	dir := initRepo(t, r)
	out, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"log", "-1", "--format=%an <%ae> / %cn <%ce>"}})
	require.NoError(t, err)
	assert.Equal(t, "grove <grove@localhost> / grove <grove@localhost>", out)

	me := gitcmd.Identity{Name: "Agent", Email: "agent@example.com"}
	_, err = r.Run(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"commit", "-q", "--allow-empty", "-m", "x"}, Author: &me})
	require.NoError(t, err)
	out, err = r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"log", "-1", "--format=%an <%ae>"}})
	require.NoError(t, err)
	assert.Equal(t, "Agent <agent@example.com>", out)
}

const hookNames = "pre-commit post-commit post-checkout post-index-change reference-transaction pre-auto-gc post-rewrite"

// plantHooks installs hooks and an fsmonitor that each leave a marker file,
// in the repository's own hooks directory and through its config.
func plantHooks(t *testing.T, dir, markers string) {
	t.Helper()
	hooks := filepath.Join(dir, ".git", "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	for _, h := range strings.Fields(hookNames) {
		script := fmt.Sprintf("#!/bin/sh\ntouch %q\ncat >/dev/null 2>&1 || true\nexit 0\n", filepath.Join(markers, h))
		require.NoError(t, os.WriteFile(filepath.Join(hooks, h), []byte(script), 0o755))
	}
	mon := filepath.Join(dir, "fsmonitor.sh")
	require.NoError(t, os.WriteFile(mon, []byte(fmt.Sprintf("#!/bin/sh\ntouch %q\nexit 1\n", filepath.Join(markers, "fsmonitor"))), 0o755))
	cfg, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(cfg, "[core]\n\tfsmonitor = %s\n", mon)
	require.NoError(t, err)
	require.NoError(t, cfg.Close())
}

// exercise runs commands that would trigger every planted hook.
func exercise(t *testing.T, dir string, run func(args ...string) error) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644))
	for _, args := range [][]string{
		{"status", "--porcelain"},
		{"add", "-A"},
		{"commit", "-q", "-m", "second"},
		{"checkout", "-q", "-b", "side"},
		{"update-ref", "refs/grove/x", "HEAD"},
		{"commit", "-q", "--amend", "-m", "amended"},
		{"checkout", "-q", "main"},
	} {
		require.NoError(t, run(args...), "git %v", args)
	}
}

func markersIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestNoHookAndNoFsmonitorRuns(t *testing.T) {
	isolateHome(t)
	r := newRunner(t)
	ctx := context.Background()

	// Control: plain git runs the planted hooks, so the check below can fail.
	control := initRepo(t, r)
	controlMarkers := t.TempDir()
	plantHooks(t, control, controlMarkers)
	exercise(t, control, func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = control
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=x", "GIT_AUTHOR_EMAIL=x@x", "GIT_COMMITTER_NAME=x", "GIT_COMMITTER_EMAIL=x@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	require.Subset(t, markersIn(t, controlMarkers), []string{"pre-commit", "post-commit", "post-checkout", "reference-transaction", "fsmonitor"},
		"plain git did not run the planted hooks: the test could not fail")

	dir := initRepo(t, r)
	markers := t.TempDir()
	plantHooks(t, dir, markers)
	exercise(t, dir, func(args ...string) error {
		_, err := r.Run(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: args})
		return err
	})
	assert.Empty(t, markersIn(t, markers), "hooks or the fsmonitor ran under the hardened runner")
}

func TestTheUsersGlobalConfigIsNotRead(t *testing.T) {
	home := isolateHome(t)
	r := newRunner(t)
	dir := initRepo(t, r)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitignore-global"), []byte("*.secret\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"),
		[]byte("[core]\n\texcludesFile = "+filepath.Join(home, ".gitignore-global")+"\n[user]\n\tname = Global User\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key.secret"), []byte("s"), 0o644))

	plain := exec.Command("git", "status", "--porcelain")
	plain.Dir = dir
	out, err := plain.Output()
	require.NoError(t, err)
	require.NotContains(t, string(out), "key.secret", "control: plain git honours the global excludes file")

	st, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"status", "--porcelain"}})
	require.NoError(t, err)
	assert.Contains(t, st, "?? key.secret", "the global excludes file changed what grove sees")
}

func TestTheEnvironmentIsHardened(t *testing.T) {
	isolateHome(t)
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("LANG", "de_DE.UTF-8")
	r := newRunner(t)
	dir := initRepo(t, r)
	// An alias runs a shell under git, which sees git's environment.
	out, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"-c", "alias.env=!env", "env"}, NoOptionalLocks: true})
	require.NoError(t, err)
	env := "\n" + out + "\n"
	for _, kv := range []string{"LC_ALL=C", "LANG=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_EDITOR=false", "GIT_OPTIONAL_LOCKS=0", "GIT_AUTHOR_NAME=grove"} {
		assert.Contains(t, env, "\n"+kv+"\n")
	}
	assert.NotContains(t, env, "GIT_DIR=/nonexistent", "an outside GIT_DIR leaked into git")
}

func TestAFailedCommandCarriesStderrAndExitCode(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	_, err := r.Run(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"rev-parse", "--verify", "--quiet", "no-such^{commit}"}})
	require.Error(t, err)
	assert.Equal(t, 1, gitcmd.ExitCode(err))
	_, err = r.Run(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"cat-file", "-t", "deadbeef"}})
	assert.Equal(t, 128, gitcmd.ExitCode(err))
	assert.Contains(t, gitcmd.Stderr(err), "fatal:")
	assert.Equal(t, grove.Internal, grove.CodeOf(err))
	var ee *gitcmd.ExitError
	assert.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "git cat-file -t deadbeef: exit 128: fatal:")
}

// helperEnv makes the test binary act as a grove process that starts a git
// command that blocks on a child of its own, says it is ready, and waits to
// be killed.
const helperEnv = "GITCMD_TEST_HELPER_DIR"

// refsHelperEnv makes the test binary act as a grove process that holds a
// ref transaction open in a Finish update-ref --stdin (prepared: the ref
// is locked), says it is ready, and waits to be killed.
const refsHelperEnv = "GITCMD_TEST_REFS_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(refsHelperEnv); dir != "" {
		r, err := gitcmd.New(context.Background(), gitcmd.Options{})
		if err != nil {
			fmt.Println("helper:", err)
			os.Exit(2)
		}
		gitDir := filepath.Join(dir, ".git")
		head, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: gitDir, Args: []string{"rev-parse", "HEAD"}})
		if err != nil {
			fmt.Println("helper:", err)
			os.Exit(2)
		}
		p, err := r.Start(gitcmd.Cmd{Dir: dir, GitDir: gitDir, Args: []string{"update-ref", "--stdin"}, Finish: true})
		if err != nil {
			fmt.Println("helper:", err)
			os.Exit(2)
		}
		if _, err := p.Exchange(context.Background(), "start\nupdate refs/heads/held "+head+"\nprepare\n", 2); err != nil {
			fmt.Println("helper:", err)
			os.Exit(2)
		}
		fmt.Println("ready")
		select {}
	}
	if dir := os.Getenv(helperEnv); dir != "" {
		r, err := gitcmd.New(context.Background(), gitcmd.Options{})
		if err != nil {
			fmt.Println("helper:", err)
			os.Exit(2)
		}
		fmt.Println("ready")
		_, _ = r.Run(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"-c", "alias.hang=!sleep " + os.Getenv("GITCMD_TEST_MARK"), "hang"}})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAContextEndedBeforehandRunsNothing(t *testing.T) {
	r := newRunner(t)
	dir := initRepo(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Run(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"commit", "--allow-empty", "-q", "-m", "never"}})
	assert.True(t, errors.Is(err, context.Canceled))
	n, err := r.Output(context.Background(), gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Args: []string{"rev-list", "--count", "HEAD"}})
	require.NoError(t, err)
	assert.Equal(t, "1", n)
}

// A command checks out sequentially unless its caller marks it Parallel:
// then it has the runner's CheckoutWorkers, from 2,000 files up; a runner
// of one worker never checks out in parallel.
func TestParallelCheckoutOnlyWhereAsked(t *testing.T) {
	ctx := context.Background()
	get := func(r *gitcmd.Runner, dir string, parallel bool, key string) string {
		t.Helper()
		out, err := r.Output(ctx, gitcmd.Cmd{Dir: dir, GitDir: filepath.Join(dir, ".git"), WorkTree: dir, Parallel: parallel, Args: []string{"config", "--get", key}})
		require.NoError(t, err)
		return out
	}
	r := newRunner(t) // CheckoutWorkers 0: one per CPU
	dir := initRepo(t, r)
	assert.Equal(t, "1", get(r, dir, false, "checkout.workers"))
	assert.Equal(t, "0", get(r, dir, true, "checkout.workers"))
	assert.Equal(t, "2000", get(r, dir, true, "checkout.thresholdForParallelism"))
	one, err := gitcmd.New(ctx, gitcmd.Options{CheckoutWorkers: 1})
	require.NoError(t, err)
	assert.Equal(t, "1", get(one, dir, true, "checkout.workers"))
	four, err := gitcmd.New(ctx, gitcmd.Options{CheckoutWorkers: 4})
	require.NoError(t, err)
	assert.Equal(t, "4", get(four, dir, true, "checkout.workers"))
	assert.Equal(t, "1", get(four, dir, false, "checkout.workers"))
}
