package tools_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/engine/tools"
)

// A lent set holds its session only while a call runs: between calls
// another holder resumes it, and what the model read still guards its
// edits.
func TestALentSetHoldsTheSessionForACallAlone(t *testing.T) {
	f := newFixture(t, nil, nil)
	id := f.s.ID()
	require.NoError(t, f.s.Detach())
	leases := 0
	lend := func(ctx context.Context) (*engine.Session, func(), error) {
		s, err := f.e.Resume(ctx, id, nil)
		if err != nil {
			return nil, nil, err
		}
		leases++
		return s, func() { require.NoError(t, s.Detach()) }, nil
	}
	set, err := tools.NewLent(lend, nil)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, tool := range set.Tools() {
		names[tool.Name] = true
	}
	assert.True(t, names["run"] && names["checkpoint"] && names["read_file"], "every tool of a head's session: %v", names)
	assert.Zero(t, leases, "defining the tools takes no session")

	f.set = set
	f.ok("read_file", js(map[string]any{"path": "README.md"}))
	// Between calls the session is free: another holder takes it, writes,
	// and lets it go.
	other, err := f.e.Resume(f.ctx, id, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(f.head, "README.md"), []byte("# changed by another\n"), 0o644))
	require.NoError(t, other.Detach())
	// The edit on what the model read before is stale, across calls.
	f.fails("edit_file", js(map[string]any{"path": "README.md", "old_string": "hello", "new_string": "bye"}), grove.Conflict)
	f.ok("read_file", js(map[string]any{"path": "README.md"}))
	f.ok("edit_file", js(map[string]any{"path": "README.md", "old_string": "another", "new_string": "the model"}))
	f.ok("checkpoint", js(map[string]any{"message": "lent"}))
	assert.Equal(t, 5, leases)

	// A lend that fails is the call's typed error.
	failing, err := tools.NewLent(func(context.Context) (*engine.Session, func(), error) {
		return nil, nil, &grove.Error{Code: grove.NotFound, Err: errors.New("no head here")}
	}, nil)
	require.NoError(t, err)
	_, err = failing.Call(f.ctx, "read_file", []byte(`{"path":"README.md"}`))
	var te *tools.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, grove.NotFound, te.Code)
	assert.Contains(t, te.Message, "no head here")
}
