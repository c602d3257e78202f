package engine_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/workspace"
)

// A session ID read from the database becomes part of a path (its lease
// file) only if it is a session ID the engine makes: a claim row whose
// holder was rewritten to a traversal is a corrupt store, and no file
// appears outside the lease directory.
func TestASessionIDFromTheDatabaseIsValidatedBeforeItIsAPath(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	h, err := ws.NewHead("solo").Shared().Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "db", "grove.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(dbPath), 0o755))
	e := openEngine(t, engine.Options{Path: dbPath, Backends: []workspace.Backend{b}, Placement: p})
	ex := engine.Placement{Exclusive: &engine.ExistingHead{Backend: b, Root: "demo", Head: "solo"}}
	s1, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	require.NoError(t, s1.Close())
	s1, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	id := s1.ID()

	db, err := sql.Open("sqlite3", dbPath)
	require.NoError(t, err)
	_, err = db.Exec(`PRAGMA foreign_keys = OFF`)
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE claims SET session_id = '../../escaped' WHERE session_id = ?`, id)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex, TakeOver: true})
	require.Error(t, err)
	assert.NotEqual(t, grove.Internal, grove.CodeOf(err), "%v", err)
	var se *engine.StoreError
	assert.ErrorAs(t, err, &se)
	_, err = os.Stat(filepath.Join(dir, "escaped.lease"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a lease file was made outside the lease directory")
}
