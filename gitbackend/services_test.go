//go:build linux

package gitbackend_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/services"
	"github.com/groveworks/grove/workspace"
)

// Every head of a workspace with Services gets its own ports and names,
// and the variables carrying them reach Setup, Teardown and Head.Run; a
// server Head.Run started is stopped by Destroy, whose block is then
// free.
func TestServicesReachEveryCommandAndDestroyStopsTheHeadsProcesses(t *testing.T) {
	f := newFixture(t)
	out := t.TempDir()
	ports := t.TempDir()
	dump := func(kind string) *grove.Hook {
		return &grove.Hook{Command: `env | grep -E '^(GROVE_PORT|GROVE_PORTS|GROVE_HEAD_SLUG|COMPOSE_PROJECT_NAME|PORT|DB)=' | sort > "$OUT/` + kind + `-$GROVE_HEAD"`,
			Env: []string{"OUT=" + out}}
	}
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, &workspace.OpenOptions{
		Setup: dump("setup"), Teardown: dump("teardown"),
		Services: &workspace.Services{PortsDir: ports, PortBlock: 3, Env: map[string]string{"PORT": "{{port 0}}", "DB": "postgres://localhost:{{port 1}}/{{slug}}"}},
	})
	require.NoError(t, err)
	defer ws.Close()
	a, err := ws.NewHead("a").From("main").Create(f.ctx)
	require.NoError(t, err)
	b, err := ws.NewHead("b").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer b.Close()
	sa, err := a.Services(f.ctx)
	require.NoError(t, err)
	sb, err := b.Services(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, sa.Ports.Size)
	assert.True(t, sa.Ports.First+3 <= sb.Ports.First || sb.Ports.First+3 <= sa.Ports.First, "%v and %v overlap", sa.Ports, sb.Ports)
	assert.NotEqual(t, sa.Slug, sb.Slug)
	assert.True(t, strings.HasPrefix(sa.Slug, "repo_a_"), sa.Slug)
	again, err := a.Services(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, sa, again, "a head keeps its block")

	want := func(s workspace.HeadServices) string {
		lines := slices.Clone(s.Env)
		slices.Sort(lines)
		return strings.Join(lines, "\n") + "\n"
	}
	setup, err := os.ReadFile(filepath.Join(out, "setup-a"))
	require.NoError(t, err)
	assert.Equal(t, want(sa), string(setup))
	assert.Contains(t, string(setup), "DB=postgres://localhost:"+strconv.Itoa(sa.Ports.First+1)+"/"+sa.Slug+"\n")
	var stdout bytes.Buffer
	_, err = a.Run(f.ctx, &workspace.Command{Argv: workspace.Shell(`env | grep -E '^(GROVE_PORT|GROVE_PORTS|GROVE_HEAD_SLUG|COMPOSE_PROJECT_NAME|PORT|DB)=' | sort`), Stdout: &stdout})
	require.NoError(t, err)
	assert.Equal(t, want(sa), stdout.String())

	// A server the head runs, and one it left behind in a session of its
	// own: Destroy stops both before anything goes.
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx, &workspace.Command{Argv: workspace.Shell(`setsid sh -c 'exec sleep 310' & exec sleep 311`)})
		done <- err
	}()
	require.Eventually(t, func() bool {
		procs, err := a.Processes(f.ctx, false)
		require.NoError(t, err)
		n := 0
		for _, p := range procs {
			if strings.HasPrefix(p.Command, "sleep 31") {
				n++
			}
		}
		return n == 2
	}, 10*time.Second, 20*time.Millisecond)
	id, dir := string(a.Info().ID), a.Info().Root
	_, err = a.Destroy(f.ctx, &workspace.DestroyOptions{Discard: true})
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the head's server outlived its destroy")
	}
	left, err := services.List(id, dir, false)
	require.NoError(t, err)
	assert.Empty(t, left)
	teardown, err := os.ReadFile(filepath.Join(out, "teardown-a"))
	require.NoError(t, err)
	assert.Equal(t, want(sa), string(teardown))
	_, ok, err := services.Registry{Dir: ports}.Lookup(f.ctx, id)
	require.NoError(t, err)
	assert.False(t, ok, "the destroyed head's block is free")
}

// Twenty heads made at once get blocks no two of which overlap.
func TestTwentyHeadsMadeAtOnceGetDisjointPorts(t *testing.T) {
	f := newFixture(t)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, &workspace.OpenOptions{
		Services: &workspace.Services{PortsDir: t.TempDir()}})
	require.NoError(t, err)
	defer ws.Close()
	blocks := make([]workspace.PortBlock, 20)
	errs := make(chan error, len(blocks))
	for i := range blocks {
		go func() {
			h, err := ws.NewHead("h" + strconv.Itoa(i)).From("main").Create(f.ctx)
			if err == nil {
				var hs workspace.HeadServices
				hs, err = h.Services(f.ctx)
				blocks[i] = hs.Ports
				_ = h.Close()
			}
			errs <- err
		}()
	}
	for range blocks {
		require.NoError(t, <-errs)
	}
	for i, a := range blocks {
		require.Equal(t, workspace.DefaultPortBlock, a.Size)
		for _, b := range blocks[i+1:] {
			assert.False(t, a.First < b.First+b.Size && b.First < a.First+a.Size, "%v and %v overlap", a, b)
		}
	}
}

// A process that starts another when told to stop is looked for again.
func TestStopProcessesLooksAgainForWhatTheStoppedStarted(t *testing.T) {
	f := newFixture(t)
	ws, err := workspace.Open(f.ctx, gitbackend.New(gitbackend.Options{}), f.repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("a").From("main").Create(f.ctx)
	require.NoError(t, err)
	defer h.Close()
	c := exec.Command("sh", "-c", `trap "setsid sleep 7781 & exit" TERM; sleep 7780 & wait`)
	c.Dir, c.Env = h.Info().Root, append(os.Environ(), "GROVE_HEAD_ID="+string(h.Info().ID))
	require.NoError(t, c.Start())
	go func() { _ = c.Wait() }()
	require.Eventually(t, func() bool {
		procs, err := h.Processes(f.ctx, false)
		require.NoError(t, err)
		return len(procs) == 2
	}, 5*time.Second, 20*time.Millisecond)
	n, err := h.StopProcesses(f.ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 3, "the shell, its sleep, and the sleep its trap started")
	procs, err := h.Processes(f.ctx, false)
	require.NoError(t, err)
	assert.Empty(t, procs)
}
