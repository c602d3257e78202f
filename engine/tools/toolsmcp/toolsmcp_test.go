package toolsmcp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
	"github.com/groveworks/grove/engine/tools/toolsmcp"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

// The server offers the session's tools over any transport (here in
// memory, on the memory backend), and a tool's failure is a tool error.
func TestServerOverMemory(t *testing.T) {
	ctx := context.Background()
	store := memorybackend.NewStore()
	_, err := store.Init("demo", fstest.MapFS{"a.txt": {Data: []byte("a\n")}})
	require.NoError(t, err)
	b := memorybackend.New(memorybackend.Options{Store: store})
	e, err := engine.Open(ctx, engine.Options{Path: filepath.Join(t.TempDir(), "g.db"), Backends: []workspace.Backend{b},
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: b, Root: "demo"}}})
	require.NoError(t, err)
	defer e.Close()
	s, err := e.NewSession(ctx, nil)
	require.NoError(t, err)
	defer s.Close()
	set, err := tools.New(s, nil)
	require.NoError(t, err)
	assert.Len(t, set.Tools(), 12, "no run tool: the memory backend's head has no directory")

	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = toolsmcp.NewServer(set, "grove", "test").Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/workspace/a.txt"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "1\ta")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "../etc"}})
	require.NoError(t, err, "a tool's failure is not a protocol error")
	assert.True(t, res.IsError)
	assert.True(t, strings.Contains(res.Content[0].(*mcp.TextContent).Text, "outside /workspace"))

	_, err = toolsmcp.HTTPHandler(toolsmcp.NewServer(set, "grove", "test"), "short")
	assert.ErrorIs(t, err, toolsmcp.ErrNoToken)
}
