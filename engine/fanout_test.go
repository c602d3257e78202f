package engine_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/workspace"
)

// fanoutFixture is a repository's workspace and an engine over it.
func fanoutFixture(t *testing.T) (*engine.Engine, *workspace.Workspace, engine.ExistingHead) {
	t.Helper()
	ctx := context.Background()
	gb := gitbackend.New(gitbackend.Options{})
	t.Cleanup(func() { _ = gb.Close() })
	repo := gitRepo(t)
	ws, err := workspace.Open(ctx, gb, repo, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{gb}})
	return e, ws, engine.ExistingHead{Backend: gb, Root: ws.Info().Locator}
}

// Fanout makes N heads from one revision, runs the command in each as a
// turn of a session of its own, checkpoints what each did, and reports a
// failed command without stopping the others.
func TestFanoutRunsOneCommandInEachOfNHeads(t *testing.T) {
	ctx := context.Background()
	e, ws, heads := fanoutFixture(t)
	var mu sync.Mutex
	out := map[string]*bytes.Buffer{}
	res, err := e.Fanout(ctx, &engine.FanoutOptions{
		Workspace: ws, Heads: heads, Name: "try", N: 3,
		Command: workspace.Command{Argv: workspace.Shell(`echo "$GROVE_HEAD" > who.txt; echo ran; [ "$GROVE_HEAD" != try-2 ]`)},
		Output: func(head string) io.Writer {
			mu.Lock()
			defer mu.Unlock()
			out[head] = &bytes.Buffer{}
			return out[head]
		},
	})
	require.NoError(t, err)
	require.Len(t, res, 3)
	for i, r := range res {
		name := []string{"try-1", "try-2", "try-3"}[i]
		assert.Equal(t, name, r.Head)
		require.NoError(t, r.Err)
		assert.Equal(t, map[bool]int{true: 1, false: 0}[name == "try-2"], r.ExitCode, name)
		assert.Equal(t, "ran\n", out[name].String())
		who, err := os.ReadFile(filepath.Join(r.Dir, "who.txt"))
		require.NoError(t, err)
		assert.Equal(t, name+"\n", string(who))
		// The checkpoint holds what the command wrote, and the session's
		// journal has the turn.
		h, err := ws.OpenHead(ctx, name, &workspace.ReopenOptions{ReadOnly: true})
		require.NoError(t, err)
		st, err := h.Status(ctx)
		require.NoError(t, err)
		assert.False(t, st.Dirty)
		assert.Equal(t, r.Checkpoint, st.Commit)
		require.NoError(t, h.Close())
		turns, err := e.Turns(ctx, r.Session)
		require.NoError(t, err)
		require.Len(t, turns, 1)
		assert.Contains(t, turns[0].Checkpoints, r.Checkpoint)
	}
}

// A head that cannot be made stops the fanout before any command runs,
// and bad options are InvalidArgument.
func TestFanoutRunsNothingWhenAHeadCannotBeMade(t *testing.T) {
	ctx := context.Background()
	e, ws, heads := fanoutFixture(t)
	h, err := ws.NewHead("try-2").Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	res, err := e.Fanout(ctx, &engine.FanoutOptions{Workspace: ws, Heads: heads, Name: "try", N: 3,
		Command: workspace.Command{Argv: workspace.Shell(`touch ran`)}})
	assert.Equal(t, grove.AlreadyExists, grove.CodeOf(err), "%v", err)
	require.Len(t, res, 1)
	assert.Equal(t, "try-1", res[0].Head)
	assert.NoFileExists(t, filepath.Join(res[0].Dir, "ran"))

	for _, o := range []engine.FanoutOptions{
		{Workspace: ws, Heads: heads, Name: "x", N: 0, Command: workspace.Command{Argv: []string{"true"}}},
		{Workspace: ws, Heads: heads, Name: "x", N: 101, Command: workspace.Command{Argv: []string{"true"}}},
		{Workspace: ws, Heads: heads, Name: "x", N: 1},
		{Heads: heads, Name: "x", N: 1, Command: workspace.Command{Argv: []string{"true"}}},
	} {
		_, err := e.Fanout(ctx, &o)
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%+v: %v", o, err)
	}
}
