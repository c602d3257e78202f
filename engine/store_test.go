package engine

import (
	"context"
	"database/sql"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden schema file")

func TestSchemaMatchesTheGoldenFile(t *testing.T) {
	ctx := context.Background()
	db, err := openStore(ctx, filepath.Join(t.TempDir(), "grove.db"))
	require.NoError(t, err)
	defer db.Close()
	got, err := schema(ctx, db)
	require.NoError(t, err)
	golden := filepath.Join("testdata", "schema.sql")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "the schema changed: add a migration, then go test ./engine -run Golden -update")
	var v int
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	var mode string
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
	assert.Equal(t, "wal", mode)
	var sync int
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync))
	assert.Equal(t, 2, sync, "synchronous=FULL")
}

func TestMigrationsApplyOnceAndInOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grove.db")
	db, err := openStore(ctx, path)
	require.NoError(t, err)
	first, err := schema(ctx, db)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	// Reopening applies nothing again.
	db, err = openStore(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	again, err := schema(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, first, again)
}

// A database SQLite made but grove never touched (version 0) is migrated
// to the current version, keeping what it holds.
func TestMigrationsUpgradeAVersionZeroDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grove.db")
	raw, err := sql.Open("sqlite3", path)
	require.NoError(t, err)
	_, err = raw.ExecContext(ctx, "CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (7)")
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	db, err := openStore(ctx, path)
	require.NoError(t, err)
	defer db.Close()
	var v, x int
	require.NoError(t, db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	require.NoError(t, db.QueryRowContext(ctx, "SELECT x FROM mine").Scan(&x))
	assert.Equal(t, 7, x)
}

func TestEventsAreAppendOnly(t *testing.T) {
	ctx := context.Background()
	db, err := openStore(ctx, filepath.Join(t.TempDir(), "grove.db"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `INSERT INTO sessions (id, placement, config_digest, state, created_at, updated_at) VALUES ('s', '{}', 'd', 'open', 't', 't')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `INSERT INTO events (session_id, seq, at, kind) VALUES ('s', 1, 't', 'bound')`)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE events SET kind = 'x'`)
	assert.ErrorContains(t, err, "append-only")
	_, err = db.ExecContext(ctx, `DELETE FROM events`)
	assert.ErrorContains(t, err, "append-only")
}

func TestResolveSnapshotPolicy(t *testing.T) {
	got, err := SnapshotPolicy{}.resolve(Placement{})
	require.NoError(t, err)
	assert.Equal(t, SnapshotPolicy{Trigger: OnIdle, Idle: DefaultIdle, Mode: BestEffort}, got)
	got, err = SnapshotPolicy{Trigger: OnTurnDone, Mode: Required}.resolve(Placement{Exclusive: &ExistingHead{}})
	require.NoError(t, err)
	assert.Equal(t, SnapshotPolicy{Trigger: OnTurnDone, Idle: DefaultIdle, Mode: Required}, got)
}
