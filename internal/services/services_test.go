package services

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Heads claiming at once get blocks no two of which overlap, and each
// keeps its own when it claims again.
func TestConcurrentClaimsAreDisjoint(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	ctx := context.Background()
	dirs := t.TempDir()
	blocks := make([]Block, 20)
	var wg sync.WaitGroup
	for i := range blocks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(dirs, strconv.Itoa(i))
			require.NoError(t, os.Mkdir(dir, 0o755))
			b, err := r.Claim(ctx, fmt.Sprintf("head-%d", i), dir, DefaultBlock)
			require.NoError(t, err)
			blocks[i] = b
		}()
	}
	wg.Wait()
	for i, a := range blocks {
		assert.Equal(t, DefaultBlock, a.Size)
		assert.GreaterOrEqual(t, a.First, PortBase)
		assert.LessOrEqual(t, a.First+a.Size, PortLimit)
		for j, b := range blocks[i+1:] {
			assert.False(t, a.overlaps(b), "heads %d and %d: %v and %v", i, i+1+j, a, b)
		}
		again, err := r.Claim(ctx, fmt.Sprintf("head-%d", i), filepath.Join(dirs, strconv.Itoa(i)), DefaultBlock)
		require.NoError(t, err)
		assert.Equal(t, a, again)
	}
}

// firstChoice is the block Claim tries first for id.
func firstChoice(id string, size int) Block {
	h := fnv.New32a()
	h.Write([]byte(id))
	n := (PortLimit - PortBase) / size
	return Block{First: PortBase + int(h.Sum32()%uint32(n))*size, Size: size}
}

// A port another program holds is never handed out, and a head whose
// directory is gone holds nothing.
func TestClaimSkipsPortsInUseAndFreesTheGone(t *testing.T) {
	r := Registry{Dir: t.TempDir()}
	ctx := context.Background()
	want := firstChoice("busy", 4)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(want.First+2))
	require.NoError(t, err)
	defer l.Close()
	dir := t.TempDir()
	b, err := r.Claim(ctx, "busy", dir, 4)
	require.NoError(t, err)
	assert.NotEqual(t, want, b)
	assert.False(t, b.overlaps(Block{First: want.First + 2, Size: 1}), "%v holds a port in use", b)

	// Its block is its own until it is released, or its directory goes.
	gone := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Mkdir(gone, 0o755))
	other, err := r.Claim(ctx, "other", gone, 4)
	require.NoError(t, err)
	got, ok, err := r.Lookup(ctx, "other")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, other, got)
	require.NoError(t, os.Remove(gone))
	_, ok, err = r.Lookup(ctx, "other")
	require.NoError(t, err)
	assert.False(t, ok, "a head whose directory is gone holds no block")
	require.NoError(t, r.Release(ctx, "busy"))
	_, ok, err = r.Lookup(ctx, "busy")
	require.NoError(t, err)
	assert.False(t, ok)

	_, err = r.Claim(ctx, "x", dir, 0)
	assert.Error(t, err)
	_, err = r.Claim(ctx, "x", dir, MaxBlock+1)
	assert.Error(t, err)
}

func TestSlugIsEveryonesName(t *testing.T) {
	for _, c := range []struct{ repo, head, id, want string }{
		{"my-app", "agent-1", "3f2a9c1d-0000-4000-8000-000000000000", "my_app_agent_1_3f2a9c1d"},
		{"My.App", "Fix Bug #12", "ab", "my_app_fix_bug_12_ab"},
		{"9lives", "x", "cd", "g_9lives_x_cd"},
		{"", "", "", "g_"},
		{strings.Repeat("r", 80), strings.Repeat("h", 80), "0123456789", strings.Repeat("r", 24) + "_" + strings.Repeat("h", 28) + "_01234567"},
	} {
		got := Slug(c.repo, c.head, c.id)
		if c.want != "g_" {
			assert.Equal(t, c.want, got)
		}
		assert.Regexp(t, `^[a-z][a-z0-9_]{0,62}$`, got, "%+v", c)
	}
}

func TestVarsRenderTheTemplates(t *testing.T) {
	h := Head{Name: "agent-1", Slug: "app_agent_1_ab", Ports: Block{First: 21000, Size: 10}}
	vars, err := Vars(h, map[string]string{"PORT": "{{port 0}}", "DATABASE_URL": "postgres://localhost:{{port 1}}/{{slug}}", "WHO": "{{head}}"})
	require.NoError(t, err)
	assert.Equal(t, []string{"GROVE_PORT=21000", "GROVE_PORTS=21000-21009", "GROVE_HEAD_SLUG=app_agent_1_ab", "COMPOSE_PROJECT_NAME=app_agent_1_ab",
		"DATABASE_URL=postgres://localhost:21001/app_agent_1_ab", "PORT=21000", "WHO=agent-1"}, vars)
	_, err = Vars(h, map[string]string{"P": "{{port 10}}"})
	assert.ErrorContains(t, err, "ports 0 to 9")
	assert.Error(t, CheckTemplates(map[string]string{"P": "{{port 3}}"}, 2))
	assert.Error(t, CheckTemplates(map[string]string{"GROVE_HOME": "x"}, 2))
	assert.Error(t, CheckTemplates(map[string]string{"GIT_DIR": "x"}, 2))
	assert.Error(t, CheckTemplates(map[string]string{"A-B": "x"}, 2))
	assert.Error(t, CheckTemplates(map[string]string{"A": "{{"}, 2))
	assert.NoError(t, CheckTemplates(map[string]string{"A": "{{port 1}}"}, 2))
}

// A head's processes are found by the GROVE_HEAD_ID they inherit, a
// setsid double fork's too, and stopped; one started by hand in its
// directory is listed with all alone.
func TestListAndStopAHeadsProcesses(t *testing.T) {
	dir := t.TempDir()
	id := fmt.Sprintf("test-%d", time.Now().UnixNano())
	start := func(env bool, script string) *exec.Cmd {
		c := exec.Command("sh", "-c", script)
		c.Dir = dir
		c.Env = os.Environ()
		if env {
			c.Env = append(c.Env, "GROVE_HEAD_ID="+id)
		}
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c
	}
	start(true, "exec sleep 300")
	start(true, "setsid sh -c 'sleep 301 & exit' ; exec sleep 302") // a double fork, in a session of its own
	start(false, "exec sleep 303")
	// Wait for the three sleeps themselves: three processes may be a
	// shell that has not yet forked or exec'd, and stopping a shell
	// before it forks leaves its child untracked by this list.
	var procs []Process
	commands := func() []string {
		var out []string
		for _, p := range procs {
			out = append(out, p.Command)
		}
		sort.Strings(out)
		return out
	}
	require.Eventually(t, func() bool {
		var err error
		procs, err = List(id, dir, false)
		require.NoError(t, err)
		return slices.Equal(commands(), []string{"sleep 300", "sleep 301", "sleep 302"})
	}, 5*time.Second, 20*time.Millisecond, "%+v", procs)
	for _, p := range procs {
		assert.True(t, p.Tracked)
	}
	all, err := List(id, dir, true)
	require.NoError(t, err)
	require.Len(t, all, 4)
	var byHand []string
	for _, p := range all {
		if !p.Tracked {
			byHand = append(byHand, p.Command)
		}
	}
	assert.Equal(t, []string{"sleep 303"}, byHand)

	require.NoError(t, Stop(context.Background(), procs, time.Second))
	left, err := List(id, dir, false)
	require.NoError(t, err)
	assert.Empty(t, left)
	all, err = List(id, dir, true)
	require.NoError(t, err)
	assert.Len(t, all, 1, "the process started by hand is left")

	// A process that ignores SIGTERM is killed after the grace period.
	start(true, "trap '' TERM; sleep 304 & wait")
	require.Eventually(t, func() bool {
		procs, _ = List(id, dir, false)
		return slices.Contains(commands(), "sleep 304") && len(procs) == 2
	}, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, Stop(context.Background(), procs, 200*time.Millisecond))
	left, err = List(id, dir, false)
	require.NoError(t, err)
	assert.Empty(t, left)
}
