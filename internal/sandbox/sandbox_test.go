package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/groveworks/grove"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvHoldsNoSecretAndNoGitRedirection(t *testing.T) {
	t.Setenv("GROVE_DATABASE", "postgres://grove:hunter2@db/grove")
	t.Setenv("GROVE_REMOTE", "https://token@example.com/r.git")
	t.Setenv("GROVE_MCP_TOKEN", "t0ken")
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws")
	t.Setenv("NPM_TOKEN", "npm")
	t.Setenv("LC_ALL", "C.UTF-8")

	env := Env(&grove.Sandbox{Env: []string{"NPM_TOKEN"}}, "GROVE_HEAD=agent", "GIT_WORK_TREE=/x", "GROVE_HOME=/y", "A=1",
		"GROVE_PORT=21000", "GROVE_PORTS=21000-21009", "GROVE_HEAD_SLUG=app_a_1")
	joined := strings.Join(env, "\n")
	for _, gone := range []string{"hunter2", "token@", "t0ken", "/elsewhere", "GIT_CONFIG_COUNT", "aws", "GIT_WORK_TREE", "GROVE_HOME"} {
		assert.NotContains(t, joined, gone)
	}
	for _, kept := range []string{"NPM_TOKEN=npm", "GROVE_HEAD=agent", "A=1", "LC_ALL=C.UTF-8", "PATH=",
		"GROVE_PORT=21000", "GROVE_PORTS=21000-21009", "GROVE_HEAD_SLUG=app_a_1"} {
		assert.Contains(t, joined, kept)
	}
}

func TestCheckRefusesWhatRunCannotHonour(t *testing.T) {
	for _, cfg := range []grove.Sandbox{
		{Kind: "docker"},
		{Kind: grove.SandboxBwrap, Home: "relative"},
		{ReadOnly: []string{"x"}},
		{Env: []string{"GROVE_DATABASE"}},
		{Env: []string{"GIT_SSH_COMMAND"}},
		{Env: []string{"A=B"}},
	} {
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(Check(&cfg)), "%+v", cfg)
	}
}

// kinds are the sandboxes each behaviour below is checked on: the host
// and bubblewrap, which the tests need (CI installs it).
func kinds(t *testing.T) []grove.Sandbox {
	if runtime.GOOS != "linux" {
		return []grove.Sandbox{{}}
	}
	return []grove.Sandbox{{}, {Kind: grove.SandboxBwrap}}
}

// name is a kind's name in a subtest's.
func name(cfg grove.Sandbox) string {
	if cfg.Kind == "" {
		return "host"
	}
	return string(cfg.Kind)
}

// runIn runs a shell line in dir (mounted read-write for a sandbox) and
// returns its output.
func runIn(t *testing.T, cfg grove.Sandbox, dir, line string, mod ...func(*Command)) (Result, string, error) {
	t.Helper()
	var out bytes.Buffer
	c := &Command{Argv: Shell(line), Dir: dir, Stdout: &out, Stderr: &out,
		Mounts: []grove.Mount{{Source: dir, Writable: true}}}
	for _, m := range mod {
		m(c)
	}
	res, err := Run(context.Background(), &cfg, c)
	return res, out.String(), err
}

func TestNoProcessOutlivesItsRun(t *testing.T) {
	for _, cfg := range kinds(t) {
		t.Run(name(cfg), func(t *testing.T) {
			dir := t.TempDir()
			// A daemon that leaves the process group and the session, and
			// would write its marker after the run returned.
			res, out, err := runIn(t, cfg, dir, `setsid sh -c 'sleep 1; echo alive > marker' </dev/null >/dev/null 2>&1 & echo started`)
			require.NoError(t, err, out)
			assert.Equal(t, 0, res.ExitCode, out)
			time.Sleep(1500 * time.Millisecond)
			assert.NoFileExists(t, filepath.Join(dir, "marker"), "a process the command left behind kept running")
		})
	}
}

func TestTimeoutKillsTheWholeTree(t *testing.T) {
	for _, cfg := range kinds(t) {
		t.Run(name(cfg), func(t *testing.T) {
			dir := t.TempDir()
			start := time.Now()
			res, out, err := runIn(t, cfg, dir, `(sleep 1; echo alive > marker) & sleep 30`, func(c *Command) { c.Timeout = 300 * time.Millisecond })
			require.NoError(t, err, out)
			assert.True(t, res.TimedOut)
			assert.Equal(t, -1, res.ExitCode)
			assert.Less(t, time.Since(start), 10*time.Second)
			time.Sleep(1500 * time.Millisecond)
			assert.NoFileExists(t, filepath.Join(dir, "marker"))
		})
	}
}

func TestAnEndedContextInterruptsThenKills(t *testing.T) {
	for _, cfg := range kinds(t) {
		t.Run(name(cfg), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for {
					if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
						cancel()
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			c := &Command{Argv: Shell(`trap 'echo got-int > interrupted; exit 3' INT; touch ready; while :; do sleep 0.05; done`),
				Dir: dir, Mounts: []grove.Mount{{Source: dir, Writable: true}}, Grace: 5 * time.Second}
			_, err := Run(ctx, &cfg, c)
			require.Error(t, err)
			assert.Equal(t, grove.Canceled, grove.CodeOf(err))
			assert.ErrorIs(t, err, context.Canceled)
			data, _ := os.ReadFile(filepath.Join(dir, "interrupted"))
			assert.Equal(t, "got-int\n", string(data), "the command got no SIGINT")
		})
	}
}

func TestStatusStdinAndOutput(t *testing.T) {
	for _, cfg := range kinds(t) {
		t.Run(name(cfg), func(t *testing.T) {
			dir := t.TempDir()
			res, out, err := runIn(t, cfg, dir, `cat; echo " $GROVE_HEAD"; exit 7`, func(c *Command) {
				c.Stdin = strings.NewReader("hello")
				c.Env = []string{"GROVE_HEAD=agent"}
			})
			require.NoError(t, err)
			assert.Equal(t, 7, res.ExitCode)
			assert.Equal(t, "hello agent\n", out)

			res, _, err = runIn(t, cfg, dir, `kill -TERM $$`)
			require.NoError(t, err)
			assert.Equal(t, 128+15, res.ExitCode)
		})
	}
}

func TestAMissingProgramIsAnError(t *testing.T) {
	_, err := Run(context.Background(), &grove.Sandbox{Kind: grove.SandboxBwrap, Program: "/nonexistent/bwrap"}, &Command{Argv: []string{"true"}})
	assert.Equal(t, grove.Unimplemented, grove.CodeOf(err))
	_, err = Run(context.Background(), nil, &Command{})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err))
	var e *grove.Error
	assert.True(t, errors.As(err, &e))
}
