package engine

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
)

// Fencing on a real PostgreSQL server: the partitions are made by ending
// a host's lease connection on the server (pg_terminate_backend), as a
// server restart or a cut network ends it, while the host lives on.

// cutLease ends the lease connection of store st on the server, as a
// partition would, and waits until the server has let its locks go.
func cutLease(t *testing.T, admin *pgx.Conn, st *sqlStore) {
	t.Helper()
	ctx := context.Background()
	d := st.dialect.(*pgDialect)
	d.mu.Lock()
	pid := d.pid
	d.mu.Unlock()
	var ok bool
	require.NoError(t, admin.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int64(pid)).Scan(&ok))
	require.True(t, ok, "the lease connection %d was not there to end", pid)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE pid = $1`, int64(pid)).Scan(&n))
		if n == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "the server kept the locks of the ended connection")
		time.Sleep(5 * time.Millisecond)
	}
}

// fenceStores opens two hosts' stores on a fresh database, and an
// administrator's connection to it.
func fenceStores(t *testing.T) (a, b *sqlStore, admin *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	db := PostgresDatabase(t)
	var err error
	a, err = openPostgresStore(ctx, db, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.close() })
	b, err = openPostgresStore(ctx, db, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.close() })
	admin, err = pgx.Connect(ctx, db)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	return a, b, admin
}

// newHeldSession makes a headless session held by st.
func newHeldSession(t *testing.T, st *sqlStore) (id string, release func() error) {
	t.Helper()
	ctx := context.Background()
	id = uuid.NewString()
	release, gen, err := st.lease(ctx, id, "test")
	require.NoError(t, err)
	require.Equal(t, int64(1), gen)
	rec := sessionRecord{id: id, placement: `{"kind":"headless"}`, digest: "d", kind: NoHead, state: "open"}
	require.NoError(t, st.create(ctx, rec, grove.Binding{}, false, false))
	return id, release
}

// journalOrder checks session id's journal: generations never decrease,
// and no event of kind stale comes after the first event of kind taken.
func journalOrder(t *testing.T, st *sqlStore, id string, stale, taken EventKind) {
	t.Helper()
	evs, err := st.events(context.Background(), id)
	require.NoError(t, err)
	seenTaken := false
	for i, ev := range evs {
		if i > 0 {
			assert.GreaterOrEqual(t, ev.Generation, evs[i-1].Generation, "event %d (%s) has an older generation than the one before it", ev.Seq, ev.Kind)
		}
		switch ev.Kind {
		case taken:
			seenTaken = true
		case stale:
			assert.False(t, seenTaken, "the first holder's %s (event %d) was journaled after the next holder took the session", stale, ev.Seq)
		}
	}
	assert.True(t, seenTaken, "the next holder's %s is in the journal", taken)
}

// A holder whose lease connection ends in the middle of a write, while
// another host takes the session over at once: the write is committed
// before the take-over, or refused; never journaled after it.
func TestALeaseLostInTheMiddleOfAWriteLetsNothingThroughAfterTheTakeOver(t *testing.T) {
	for _, at := range []string{"begin", "fenced", "commit"} {
		t.Run(at, func(t *testing.T) {
			ctx := context.Background()
			a, b, admin := fenceStores(t)
			id, _ := newHeldSession(t, a)
			taken := make(chan error, 1)
			var releaseB func() error
			cut := false
			a.step = func(step string) {
				if step != at || cut {
					return
				}
				cut = true
				cutLease(t, admin, a)
				go func() {
					release, _, err := b.lease(ctx, id, "take over")
					if err == nil {
						releaseB = release
						err = b.journal(ctx, id, EventResumed, NoPayload{})
					}
					taken <- err
				}()
				// a's write goes on once b is done, or waits for it.
				for deadline := time.Now().Add(10 * time.Second); ; {
					select {
					case err := <-taken:
						taken <- err
						return
					default:
					}
					var waiting int
					require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&waiting))
					if waiting > 0 {
						return
					}
					require.True(t, time.Now().Before(deadline), "the other host neither took the session nor waited")
					time.Sleep(time.Millisecond)
				}
			}
			err := a.journal(ctx, id, EventKind("stale-write"), NoPayload{})
			a.step = nil
			require.True(t, cut)
			require.NoError(t, <-taken)
			if err != nil {
				assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
			}
			journalOrder(t, b, id, "stale-write", EventResumed)
			// And every later write of the first holder is refused.
			err = a.journal(ctx, id, EventKind("stale-write"), NoPayload{})
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
			require.NoError(t, releaseB())
		})
	}
}

// A holder cut off from the server while another host takes the
// session and lets it go again: its heartbeat takes the lease back (no
// one holds it), and its writes are still refused.
func TestALeaseTakenBackAfterAnotherHolderIsFenced(t *testing.T) {
	ctx := context.Background()
	a, b, admin := fenceStores(t)
	id, _ := newHeldSession(t, a)
	require.NoError(t, a.journal(ctx, id, EventKind("first-write"), NoPayload{}))

	cutLease(t, admin, a)
	release, gen, err := b.lease(ctx, id, "take over")
	require.NoError(t, err)
	assert.Equal(t, int64(2), gen)
	require.NoError(t, b.journal(ctx, id, EventResumed, NoPayload{}))
	require.NoError(t, release())

	a.dialect.(*pgDialect).beat()
	require.True(t, a.dialect.(*pgDialect).holds(id), "the heartbeat took the free lease back")
	for _, write := range []func() error{
		func() error { return a.journal(ctx, id, EventKind("stale-write"), NoPayload{}) },
		func() error { return a.setLast(ctx, id, "abc", EventCheckpointed, NoPayload{}) },
		func() error { return a.closeSession(ctx, id) },
	} {
		err := write()
		assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
	}
	journalOrder(t, b, id, "stale-write", EventResumed)
	rec, _, err := b.load(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "open", rec.state, "the stale holder closed the session")
	assert.Empty(t, rec.lastCheckpoint)
}

// Each holder takes the next generation; the journal records the one
// each event was written under, and Event.Generation reads it.
func TestEveryHolderTakesTheNextGeneration(t *testing.T) {
	ctx := context.Background()
	a, b, _ := fenceStores(t)
	id, release := newHeldSession(t, a)
	require.NoError(t, release())
	for want := int64(2); want <= 4; want++ {
		st := []*sqlStore{a, b}[want%2]
		release, gen, err := st.lease(ctx, id, "test")
		require.NoError(t, err)
		assert.Equal(t, want, gen)
		require.NoError(t, st.journal(ctx, id, EventResumed, NoPayload{}))
		require.NoError(t, release())
	}
	evs, err := a.events(ctx, id)
	require.NoError(t, err)
	var gens []int64
	for _, ev := range evs {
		gens = append(gens, ev.Generation)
	}
	assert.Equal(t, []int64{1, 2, 3, 4}, gens)
}
