package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/workspace"
)

// editChild is set in the child processes of TestTwoProcessesEditingOneFile:
// the repository, the database, and how many increments to make.
const editChild = "GROVE_TEST_EDIT_CHILD"

// Two processes, each with a session of its own on one shared head, each
// incrementing a counter in one file through edit_file 1,000 times (reading
// again whenever an edit finds the file changed): no update is lost.
func TestTwoProcessesEditingOneFile(t *testing.T) {
	if spec := os.Getenv(editChild); spec != "" {
		editIncrements(t, spec)
		return
	}
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, githarness.InitRepo(ctx, repo, fstest.MapFS{"counter.txt": {Data: []byte("count=0\n")}}))
	gb := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(ctx, gb, repo, nil)
	require.NoError(t, err)
	h, err := ws.NewHead("shared").Shared().Create(ctx)
	require.NoError(t, err)
	root := h.Info().Root
	require.NoError(t, h.Close())
	require.NoError(t, ws.Close())

	const rounds = 1000
	db := filepath.Join(t.TempDir(), "grove.db")
	var children []*exec.Cmd
	for range 2 {
		c := exec.Command(os.Args[0], "-test.run=^TestTwoProcessesEditingOneFile$", "-test.count=1")
		c.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d", editChild, repo, db, rounds))
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		require.NoError(t, c.Start())
		children = append(children, c)
	}
	for _, c := range children {
		require.NoError(t, c.Wait())
	}
	data, err := os.ReadFile(filepath.Join(root, "counter.txt"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("count=%d\n", 2*rounds), string(data), "updates were lost")
}

func editIncrements(t *testing.T, spec string) {
	parts := strings.Split(spec, "|")
	n, _ := strconv.Atoi(parts[2])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gb := gitbackend.New(gitbackend.Options{})
	e, err := engine.Open(ctx, engine.Options{Path: parts[1], Backends: []workspace.Backend{gb}})
	require.NoError(t, err)
	defer e.Close()
	s, err := e.NewSession(ctx, &engine.SessionOptions{Placement: engine.Placement{Shared: &engine.ExistingHead{Backend: gb, Root: parts[0], Head: "shared"}}})
	require.NoError(t, err)
	set, err := tools.New(s, &tools.Options{Tools: []string{"read_file", "edit_file"}})
	require.NoError(t, err)
	for done := 0; done < n; {
		out, err := set.Call(ctx, "read_file", json.RawMessage(`{"path":"counter.txt"}`))
		require.NoError(t, err)
		i := strings.Index(out, "count=")
		require.GreaterOrEqual(t, i, 0, out)
		v, err := strconv.Atoi(strings.TrimSpace(out[i+len("count="):]))
		require.NoError(t, err, out)
		in, _ := json.Marshal(map[string]any{"path": "counter.txt", "old_string": fmt.Sprintf("count=%d\n", v), "new_string": fmt.Sprintf("count=%d\n", v+1)})
		_, err = set.Call(ctx, "edit_file", in)
		switch grove.CodeOf(err) {
		case grove.OK:
			done++
		case grove.Conflict, grove.NotFound:
			// The other process got there first: read again.
		default:
			require.NoError(t, err)
		}
	}
}
