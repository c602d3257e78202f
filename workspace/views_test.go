package workspace_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// A head from Reopen owns its workspace; closing them in either order works.
func TestAReopenedHeadClosesAfterItsWorkspace(t *testing.T) {
	ctx := context.Background()
	b := project()
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	h, err := ws.NewHead("r").Create(ctx)
	require.NoError(t, err)
	bind := h.Binding()
	require.NoError(t, h.Close())
	require.NoError(t, ws.Close())

	r, err := workspace.Reopen(ctx, b, bind, nil)
	require.NoError(t, err)
	require.NoError(t, r.Workspace().Close())
	assert.NoError(t, r.Close(), "closing a reopened head after its workspace")
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(r.Close()), "a second Close")
}

// A read-only view reads as the head does, changes nothing, and so does the
// workspace reached from it; the head it was made from stays writable.
func TestAReadOnlyViewChangesNothing(t *testing.T) {
	ctx := context.Background()
	ws, err := workspace.Open(ctx, project(), "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("rw").Shared().Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	v := h.ReadOnly()
	assert.True(t, v.IsReadOnly())
	assert.False(t, h.IsReadOnly())
	assert.Same(t, v, v.ReadOnly())
	assert.Equal(t, h.Binding(), v.Binding())

	denied := func(what string, err error) {
		t.Helper()
		assert.Equal(t, grove.PermissionDenied, grove.CodeOf(err), "%s: %v", what, err)
	}
	_, err = v.Checkpoint(ctx, nil)
	denied("Checkpoint", err)
	_, err = v.Restore(ctx, "main", nil)
	denied("Restore", err)
	_, err = v.Fork(ctx, "f", nil)
	denied("Fork", err)
	denied("Archive", v.Archive(ctx))
	_, err = v.Destroy(ctx, nil)
	denied("Destroy", err)
	for op, err := range map[string]error{
		"WriteFile":   v.FS().WriteFile("main.go", []byte("x"), 0o644),
		"WriteFileIf": v.FS().WriteFileIf("main.go", []byte("x"), 0o644, grove.Digest{}),
		"MkdirAll":    v.FS().MkdirAll("d", 0o755),
		"Remove":      v.FS().Remove("main.go"),
		"Rename":      v.FS().Rename("main.go", "moved.go"),
		"Symlink":     v.FS().Symlink("main.go", "l"),
		"Chmod":       v.FS().Chmod("main.go", 0o755),
	} {
		denied("FS()."+op, err)
	}
	vw := v.Workspace()
	assert.Nil(t, vw.Backend(), "a read-only workspace hands out its backend, through which any head reopens writable")
	_, err = vw.NewHead("n").Create(ctx)
	denied("Workspace().NewHead", err)
	_, err = vw.Attach(ctx, "a", t.TempDir())
	denied("Workspace().Attach", err)
	denied("Workspace().SetArchived", vw.SetArchived(ctx, "rw", true))
	o, err := vw.OpenHead(ctx, "rw", nil)
	require.NoError(t, err, "a read-only workspace opens heads")
	assert.True(t, o.IsReadOnly(), "as read-only views")
	denied("OpenHead(...).FS().Remove", o.FS().Remove("main.go"))
	require.NoError(t, o.Close())

	data, err := v.FS().ReadFile("main.go")
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(data))
	st, err := v.Status(ctx)
	require.NoError(t, err)
	assert.False(t, st.Dirty, "the view changed the head")

	require.NoError(t, h.FS().WriteFile("main.go", []byte("package main // ok\n"), 0o644), "the head stays writable")
	_, err = h.Checkpoint(ctx, nil)
	require.NoError(t, err)
}

// SetArchived takes a head's name, as OpenHead does.
func TestSetArchivedTakesAName(t *testing.T) {
	ctx := context.Background()
	ws, err := workspace.Open(ctx, project(), "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("a").Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	require.NoError(t, ws.SetArchived(ctx, "a", true))
	_, err = ws.OpenHead(ctx, "a", nil)
	assert.Equal(t, grove.Archived, grove.CodeOf(err))
	require.NoError(t, ws.SetArchived(ctx, "a", false))
	assert.Equal(t, grove.NotFound, grove.CodeOf(ws.SetArchived(ctx, "nobody", true)))
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(ws.SetArchived(ctx, "../x", true)))
}

// The options of the safety checkpoint reach it: its message and author
// are the caller's.
func TestRestoreTakesTheSafetyCheckpointWithTheCallersOptions(t *testing.T) {
	ctx := context.Background()
	ws, err := workspace.Open(ctx, project(), "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("s").Create(ctx)
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.FS().WriteFile("main.go", []byte("package main // dirty\n"), 0o644))
	who := grove.Signature{Name: "Ada", Email: "ada@example.com"}
	res, err := h.Restore(ctx, "main", &workspace.RestoreOptions{Checkpoint: workspace.CheckpointOptions{Message: "before the experiment", Author: who}})
	require.NoError(t, err)
	require.NotNil(t, res.Safety)
	assert.Equal(t, "before the experiment", res.Safety.Message)
	assert.Equal(t, who, res.Safety.Author)
}

// A head name may be 1 to 100 bytes long: 100 is allowed, 101 is not.
func TestHeadNamesUpTo100BytesAreValid(t *testing.T) {
	ctx := context.Background()
	ws, err := workspace.Open(ctx, project(), "demo", nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("a" + strings.Repeat("b", 99)).Create(ctx)
	require.NoError(t, err, "a 100-byte name")
	require.NoError(t, h.Close())
	_, err = ws.NewHead("a" + strings.Repeat("b", 100)).Create(ctx)
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "a 101-byte name")
}
