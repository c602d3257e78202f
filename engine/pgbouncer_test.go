package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
)

// Through a real PgBouncer: session pooling works, leases and fences
// included; transaction and statement pooling, through which a lease (a
// session-level advisory lock) would not hold, are refused at Open.
func TestPgBouncer(t *testing.T) {
	ctx := context.Background()
	db := PostgresDatabase(t)
	for _, mode := range []string{"transaction", "statement"} {
		t.Run(mode, func(t *testing.T) {
			_, err := Open(ctx, Options{Path: pgCluster.Bouncer(t, mode, db), LeaseDir: t.TempDir()})
			var se *StoreError
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Equal(t, StoreSharedConnections, se.Kind)
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err))
			assert.Contains(t, err.Error(), "session mode")
		})
	}
	t.Run("session", func(t *testing.T) {
		url := pgCluster.Bouncer(t, "session", db)
		open := func() *Engine {
			e, err := Open(ctx, Options{Path: url, LeaseDir: filepath.Join(t.TempDir(), "l")})
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			return e
		}
		a, b := open(), open()
		s, err := a.NewSession(ctx, &SessionOptions{Headless: true})
		require.NoError(t, err)
		_, err = b.Resume(ctx, s.ID(), nil)
		var re *ResumeError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, SessionBusy, re.Kind, "a lease through the pooler holds")
		require.NoError(t, s.Detach(), "the holder's writes pass its fence")
		r, err := b.Resume(ctx, s.ID(), nil)
		require.NoError(t, err)
		assert.Equal(t, int64(2), r.Generation())
		require.NoError(t, r.Close())
		hosts, err := a.Hosts(ctx)
		require.NoError(t, err)
		assert.Len(t, hosts, 2)
	})
}
