package tools_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/internal/githarness"
)

// TestMain lets the test binary serve as a probe inside the sandbox: with
// GROVE_PROBE_DIAL set to network:address, it tries to connect there.
func TestMain(m *testing.M) {
	if a := os.Getenv("GROVE_PROBE_DIAL"); a != "" {
		network, addr, _ := strings.Cut(a, ":")
		if c, err := net.Dial(network, addr); err == nil {
			c.Close()
			fmt.Println("CONNECTED", a)
			os.Exit(0)
		}
		fmt.Println("refused", a)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// sandboxed is a tools fixture whose engine runs commands under bwrap.
func sandboxed(eopts func(*engine.Options), opts *engine.SessionOptions) func(t *testing.T) *fixture {
	return func(t *testing.T) *fixture {
		return newFixtureWith(t, func(o *engine.Options) {
			o.Sandbox = &grove.Sandbox{Kind: grove.SandboxBwrap}
			if eopts != nil {
				eopts(o)
			}
		}, opts, nil)
	}
}

// TestAProbeInTheSandboxReachesNothingButItsHead is the sealed head's
// acceptance test: an agent's command tries everything it should not, and
// everything it should.
func TestAProbeInTheSandboxReachesNothingButItsHead(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("HOME SECRET"), 0o600))
	run := filepath.Join("/run", "grove-probe-"+filepath.Base(home))
	require.NoError(t, os.MkdirAll(run, 0o700))
	t.Cleanup(func() { os.RemoveAll(run) })
	t.Setenv("XDG_RUNTIME_DIR", run)
	var socks []string
	for _, p := range []string{filepath.Join(run, "bus"), filepath.Join(home, ".agent.sock"), filepath.Join("/run", "grove-probe-"+filepath.Base(home)+".sock")} {
		l, err := net.Listen("unix", p)
		require.NoError(t, err)
		t.Cleanup(func() { l.Close(); os.Remove(p) })
		socks = append(socks, "unix:"+p)
	}

	f := sandboxed(nil, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"secrets/"}}}})(t)
	other := filepath.Join(f.outside, "secret") // another project's file
	common := filepath.Join(f.repo, ".git")
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "secrets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "secrets", "token"), []byte("DENIED PATH"), 0o644))
	copyFile(t, os.Args[0], filepath.Join(f.head, "probe"))
	mainBefore, err := githarness.Git(f.ctx, f.repo, "rev-parse", "main")
	require.NoError(t, err)
	configBefore, err := os.ReadFile(filepath.Join(common, "config"))
	require.NoError(t, err)

	var probe strings.Builder
	fmt.Fprintf(&probe, "cat %q %q secrets/token 2>/dev/null\n", filepath.Join(home, ".ssh", "id_ed25519"), other)
	for _, s := range socks {
		fmt.Fprintf(&probe, "GROVE_PROBE_DIAL=%s ./probe\n", s)
	}
	fmt.Fprintf(&probe, `for f in $(cd %[1]s && find . -type f | grep -v -e '^./objects/' -e '^./worktrees/'); do echo x >> %[1]s/$f 2>/dev/null; done
git update-ref refs/heads/main HEAD 2>/dev/null; git branch -f main HEAD 2>/dev/null
git update-ref refs/remotes/origin/evil HEAD
mkdir -p %[1]s/hooks 2>/dev/null; printf '#!/bin/sh\ntouch %[2]s/pwned\n' > %[1]s/hooks/post-commit 2>/dev/null
git config core.fsmonitor "touch %[2]s/pwned"
setsid sh -c 'sleep 2; touch %[2]s/alive' </dev/null >/dev/null 2>&1 &
set -e
echo work > work.txt
git status --porcelain | grep -q work.txt
git add work.txt
git commit -qm "the agent's commit"
git log --format=%%s -1
git diff HEAD~1 --stat | grep -q work.txt
echo more > more.txt && git add more.txt && git stash -q && git stash pop -q
echo PROBE-DONE
`, common, f.head)
	out := f.ok("run", js(map[string]any{"command": probe.String(), "timeout_seconds": 60}))
	assert.Contains(t, out, "exit status 0", out)
	assert.Contains(t, out, "PROBE-DONE")
	assert.Contains(t, out, "the agent's commit")
	for _, secret := range []string{"HOME SECRET", "top secret", "DENIED PATH", "CONNECTED"} {
		assert.NotContains(t, out, secret)
	}

	// The next checkpoint holds the agent's commit; the repository holds
	// nothing else of what it tried.
	out = f.ok("checkpoint", `{"message":"after the probe"}`)
	cp := strings.TrimSpace(f.git("rev-parse", "HEAD", f.head))
	log := f.git("log", "--format=%s", cp)
	assert.Contains(t, log, "the agent's commit", "checkpoint: %s", out)
	assert.Equal(t, mainBefore, f.git("rev-parse", "main"), "main moved")
	configAfter, err := os.ReadFile(filepath.Join(common, "config"))
	require.NoError(t, err)
	assert.Equal(t, string(configBefore), string(configAfter))
	assert.NotContains(t, f.git("for-each-ref"), "evil")
	assert.NoDirExists(t, filepath.Join(common, "hooks", "post-commit"))

	// The user's own git in the main checkout runs nothing the agent wrote.
	// (The agent's git in its sandbox ran its own fsmonitor: that was its
	// to run, there.)
	require.NoError(t, os.RemoveAll(filepath.Join(f.head, "pwned")))
	f.git("status")
	require.NoError(t, os.WriteFile(filepath.Join(f.repo, "user.txt"), []byte("mine\n"), 0o644))
	f.git("add", "user.txt")
	f.git("commit", "-qm", "the user's commit")
	f.git("checkout", "-q", "-b", "user-branch")
	time.Sleep(2500 * time.Millisecond)
	assert.NoFileExists(t, filepath.Join(f.head, "pwned"))
	assert.NoFileExists(t, filepath.Join(f.head, "alive"), "a process the probe left behind kept running")
}

// git runs git in the main checkout, or in the directory given last.
func (f *fixture) git(args ...string) string {
	f.t.Helper()
	dir := f.repo
	if len(args) > 1 && filepath.IsAbs(args[len(args)-1]) {
		dir, args = args[len(args)-1], args[:len(args)-1]
	}
	out, err := githarness.Git(f.ctx, dir, args...)
	require.NoError(f.t, err)
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

func TestTheForkToolRunsNoSetupOutsideASandbox(t *testing.T) {
	setup := func(o *engine.Options) {
		o.Placement.PerSession.Setup = &grove.Hook{Command: "touch setup-ran"}
	}
	f := newFixtureWith(t, setup, nil, nil)
	msg := f.fails("fork", `{"name":"child"}`, grove.PermissionDenied)
	assert.Contains(t, msg, "sandbox")
	_, err := os.Stat(filepath.Join(filepath.Dir(f.head), "child"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the fork made a head")

	f = sandboxed(setup, nil)(t)
	f.ok("fork", `{"name":"child"}`)
	assert.FileExists(t, filepath.Join(filepath.Dir(f.head), "child", "setup-ran"))
}

// A sandboxed agent whose session policy denies "/vault/creds.json" and
// "private/*" renames the directories holding them (only the denied files
// themselves are masked, so their parents can be moved; the session's FS
// refuses exactly this rename, "a directory renamed out of its rule").
// Its next command read them at their new paths (Hidden() matches the
// policy's patterns against the paths as they are then). The directories
// that hold a hidden path are pinned in the sandbox: they cannot be moved.
func TestAttackADeniedFileCannotBeMovedOutOfItsMask(t *testing.T) {
	f := sandboxed(nil, &engine.SessionOptions{Policy: []engine.Policy{{Deny: []string{"/vault/creds.json", "private/*"}}}})(t)
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "vault"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "vault", "creds.json"), []byte("DENIED-CREDS"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(f.head, "private"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "private", "k"), []byte("DENIED-KEY"), 0o644))

	// The session's own tools refuse.
	f.fails("read_file", `{"path":"vault/creds.json"}`, grove.PermissionDenied)

	out := f.ok("run", js(map[string]any{"command": "cat vault/creds.json private/k; mv vault v2 && mv private pub && echo moved"}))
	assert.NotContains(t, out, "DENIED")
	assert.NotContains(t, out, "moved")
	out = f.ok("run", js(map[string]any{"command": "cat v2/creds.json pub/k"}))
	assert.NotContains(t, out, "DENIED-CREDS", "the sandbox read a denied file after moving its directory")
	assert.NotContains(t, out, "DENIED-KEY", "the sandbox read a denied file after moving its directory")
}
