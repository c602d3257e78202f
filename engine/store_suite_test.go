package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/pgtest"
)

// One private PostgreSQL cluster serves this test binary: started by the
// first test that asks for a database, stopped by TestMain.
var (
	pgOnce    sync.Once
	pgCluster *pgtest.Cluster
	pgErr     error
)

// PostgresDatabase returns the URL of a fresh database on the test
// binary's private PostgreSQL server, failing t when the server cannot be
// started. External tests (package engine_test) use it too.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() { pgCluster, pgErr = pgtest.Start() })
	if pgErr != nil {
		t.Fatalf("the PostgreSQL server for the tests: %v", pgErr)
	}
	return pgCluster.Database(t)
}

func TestMain(m *testing.M) {
	if spec := os.Getenv("GROVE_TEST_LEASE_HOLDER"); spec != "" {
		holdLease(spec) // never returns
	}
	if spec := os.Getenv("GROVE_FLEET_HOST"); spec != "" {
		fleetHost(spec) // never returns
	}
	code := m.Run()
	if pgCluster != nil {
		if err := pgCluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// holdLease is the helper process of the liveness tests: it opens the
// store spec names, takes one session's lease, says "held" and waits to
// be killed.
func holdLease(spec string) {
	var arg struct{ Path, LeaseDir, ID string }
	if err := json.Unmarshal([]byte(spec), &arg); err != nil {
		panic(err)
	}
	st, err := openTestStore(context.Background(), arg.Path, arg.LeaseDir)
	if err != nil {
		panic(err)
	}
	if _, _, err := st.lease(context.Background(), arg.ID, "helper"); err != nil {
		panic(err)
	}
	fmt.Println("held")
	select {}
}

func openTestStore(ctx context.Context, path, leaseDir string) (*sqlStore, error) {
	if isPostgresURL(path) {
		return openPostgresStore(ctx, path, 0)
	}
	return openSQLiteStore(ctx, path, leaseDir)
}

// storeTarget is one store under test: where it is, and how to open more
// connections to it (each open is another host's).
type storeTarget struct {
	path, leaseDir string
}

func (tg storeTarget) open(t *testing.T) *sqlStore {
	t.Helper()
	st, err := openTestStore(context.Background(), tg.path, tg.leaseDir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.close() })
	return st
}

func TestStoreSQLite(t *testing.T) {
	dir := t.TempDir()
	storeSuite(t, func(t *testing.T) storeTarget {
		d := t.TempDir()
		return storeTarget{path: filepath.Join(d, "grove.db"), leaseDir: filepath.Join(dir, "leases")}
	})
}

func TestStorePostgres(t *testing.T) {
	storeSuite(t, func(t *testing.T) storeTarget { return storeTarget{path: PostgresDatabase(t)} })
}

func testRecord(agent string) sessionRecord {
	return sessionRecord{
		id: uuid.NewString(), agent: agent, placement: `{"kind":"exclusive","head":"h"}`, digest: "d1",
		lastCheckpoint: "c0ffee", perm: ReadWrite, snap: SnapshotPolicy{Trigger: Manual, Mode: BestEffort},
		config: []byte("cfg\x00bytes"), policy: []Policy{{Deny: []string{"secret/"}}}, roots: []Root{{Name: "docs", Dir: "/tmp/docs"}},
	}
}

func testBinding(head string) grove.Binding {
	return grove.Binding{Version: grove.BindingVersion, Backend: "git", Workspace: "ws-1", Head: grove.HeadID(head),
		Access: grove.Isolated, Payload: json.RawMessage(`{"dir":"/x"}`)}
}

func kinds(evs []Event) []EventKind {
	var out []EventKind
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

// storeSuite is the store contract: every store passes it.
func storeSuite(t *testing.T, fresh func(t *testing.T) storeTarget) {
	ctx := context.Background()

	t.Run("Generations", func(t *testing.T) {
		tg := fresh(t)
		a, b := tg.open(t), tg.open(t)
		rec := testRecord("gen")
		release, gen, err := a.lease(ctx, rec.id, "test")
		require.NoError(t, err)
		assert.Equal(t, int64(1), gen, "a new session starts at generation 1")
		require.NoError(t, a.create(ctx, rec, testBinding(uuid.NewString()), true, false))
		require.NoError(t, a.journal(ctx, rec.id, EventTurnStarted, NoPayload{}))
		require.NoError(t, release())
		err = a.journal(ctx, rec.id, EventTurnDone, NoPayload{})
		assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "a write after the lease was let go: %v", err)

		release, gen, err = b.lease(ctx, rec.id, "test")
		require.NoError(t, err)
		assert.Equal(t, int64(2), gen, "the next holder takes the next generation")
		require.NoError(t, b.journal(ctx, rec.id, EventResumed, NoPayload{}))
		require.NoError(t, release())

		// A claim taken over from a session that is not live fences it.
		bind := testBinding(uuid.NewString())
		loser := testRecord("loser")
		lrelease, _, err := a.lease(ctx, loser.id, "test")
		require.NoError(t, err)
		require.NoError(t, a.create(ctx, loser, bind, true, false))
		require.NoError(t, lrelease())
		taker := testRecord("taker")
		trelease, _, err := b.lease(ctx, taker.id, "test")
		require.NoError(t, err)
		defer trelease()
		require.NoError(t, b.create(ctx, taker, bind, true, true))
		evs, err := b.events(ctx, loser.id)
		require.NoError(t, err)
		require.Equal(t, []EventKind{EventBound, EventTakenOver}, kinds(evs))
		assert.Equal(t, evs[0].Generation+1, evs[1].Generation, "the loser's generation moved on")

		evs, err = a.events(ctx, rec.id)
		require.NoError(t, err)
		var gens []int64
		for _, ev := range evs {
			gens = append(gens, ev.Generation)
		}
		assert.Equal(t, []int64{1, 1, 2}, gens, "each event records the generation it was written under")
	})

	t.Run("SessionsAndBindings", func(t *testing.T) {
		st := fresh(t).open(t)
		rec, bind := testRecord("alpha"), testBinding(uuid.NewString())
		release, _, err := st.lease(ctx, rec.id, "test")
		require.NoError(t, err)
		defer release()
		require.NoError(t, st.create(ctx, rec, bind, true, false))
		got, data, err := st.load(ctx, rec.id)
		require.NoError(t, err)
		assert.Equal(t, rec.agent, got.agent)
		assert.Equal(t, rec.placement, got.placement)
		assert.Equal(t, rec.digest, got.digest)
		assert.Equal(t, rec.lastCheckpoint, got.lastCheckpoint)
		assert.Equal(t, "open", got.state)
		assert.Equal(t, rec.perm, got.perm)
		assert.Equal(t, rec.snap, got.snap)
		assert.Equal(t, rec.config, got.config)
		assert.Equal(t, rec.policy, got.policy)
		assert.Equal(t, rec.roots, got.roots)
		back, err := grove.DecodeBinding(data)
		require.NoError(t, err)
		assert.True(t, back.Equal(bind))

		headless := testRecord("beta")
		headless.config = nil
		require.NoError(t, st.create(ctx, headless, grove.Binding{}, false, false))
		_, data, err = st.load(ctx, headless.id)
		require.NoError(t, err)
		assert.Nil(t, data, "a headless session has no binding")

		_, _, err = st.load(ctx, uuid.NewString())
		assert.ErrorIs(t, err, errNoSession)
		_, err = st.sessions(ctx, sessionQuery{id: uuid.NewString()})
		assert.ErrorIs(t, err, errNoSession)

		all, err := st.sessions(ctx, sessionQuery{})
		require.NoError(t, err)
		require.Len(t, all, 2)
		assert.Equal(t, rec.id, all[0].ID, "oldest first")
		assert.True(t, all[0].Claims)
		assert.False(t, all[1].Claims)
		assert.Equal(t, "h", all[0].Head)
		assert.Equal(t, rec.config, all[0].Config)

		require.NoError(t, st.setLast(ctx, rec.id, "beef", EventCheckpointed, map[string]any{"checkpoint": "beef"}))
		got, _, err = st.load(ctx, rec.id)
		require.NoError(t, err)
		assert.Equal(t, grove.CheckpointID("beef"), got.lastCheckpoint)

		// A head that moved: a new binding, a new last checkpoint, one event.
		moved := bind
		moved.Payload = json.RawMessage(`{"dir":"/elsewhere"}`)
		require.NoError(t, st.rebind(ctx, rec.id, moved, "cafe", EventRelocated, map[string]any{"commit": "cafe"}))
		got, data, err = st.load(ctx, rec.id)
		require.NoError(t, err)
		assert.Equal(t, grove.CheckpointID("cafe"), got.lastCheckpoint)
		back, err = grove.DecodeBinding(data)
		require.NoError(t, err)
		assert.True(t, back.Equal(moved))
		require.NoError(t, st.setLast(ctx, rec.id, "beef", EventCheckpointed, map[string]any{"checkpoint": "beef"}))

		// A second session with the same ID is refused, and changes nothing.
		err = st.create(ctx, rec, bind, false, false)
		require.Error(t, err)
		evs, err := st.events(ctx, rec.id)
		require.NoError(t, err)
		assert.Equal(t, []EventKind{EventBound, EventCheckpointed, EventRelocated, EventCheckpointed}, kinds(evs))
	})

	t.Run("ClaimsAndTakeOver", func(t *testing.T) {
		tg := fresh(t)
		st := tg.open(t)
		bind := testBinding(uuid.NewString())
		first, second := testRecord("first"), testRecord("second")
		release, _, err := st.lease(ctx, first.id, "test")
		require.NoError(t, err)
		require.NoError(t, st.create(ctx, first, bind, true, false))
		// Claimed by a live session: AlreadyBound, take-over or not,
		// and the loser is not made.
		err = st.create(ctx, second, bind, true, true)
		assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "%v", err)
		_, _, err = st.load(ctx, second.id)
		assert.ErrorIs(t, err, errNoSession)
		require.NoError(t, release())
		// Not live any more: still AlreadyBound without take-over...
		release2, _, err := st.lease(ctx, second.id, "test")
		require.NoError(t, err)
		defer release2()
		err = st.create(ctx, second, bind, true, false)
		assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "%v", err)
		// ... and the claim passes with it; the loser's journal says so.
		require.NoError(t, st.create(ctx, second, bind, true, true))
		evs, err := st.events(ctx, first.id)
		require.NoError(t, err)
		assert.Equal(t, []EventKind{EventBound, EventTakenOver}, kinds(evs))
		// The claim is the winner's: the first session cannot claim back.
		err = st.claim(ctx, first.id, bind)
		assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err))
		require.NoError(t, st.claim(ctx, second.id, bind), "claiming one's own head again is a no-op")
		// Closing releases the claim and journals "closed".
		require.NoError(t, st.closeSession(ctx, second.id))
		require.NoError(t, st.claim(ctx, first.id, bind))
		evs, err = st.events(ctx, second.id)
		require.NoError(t, err)
		assert.Equal(t, []EventKind{EventBound, EventClosed}, kinds(evs))
		infos, err := st.sessions(ctx, sessionQuery{id: second.id})
		require.NoError(t, err)
		assert.Equal(t, SessionClosed, infos[0].State)
		open, err := st.sessions(ctx, sessionQuery{open: true})
		require.NoError(t, err)
		require.Len(t, open, 1, "only the open session")
		assert.Equal(t, first.id, open[0].ID)
		_, err = st.sessions(ctx, sessionQuery{id: second.id, open: true})
		assert.ErrorIs(t, err, errNoSession, "a closed session is no open one")
		require.NoError(t, st.reopen(ctx, second.id, EventResumed, nil))
		infos, err = st.sessions(ctx, sessionQuery{id: second.id})
		require.NoError(t, err)
		assert.Equal(t, SessionOpen, infos[0].State)
	})

	t.Run("JournalIsAppendOnly", func(t *testing.T) {
		st := fresh(t).open(t)
		rec := testRecord("j")
		release, _, err := st.lease(ctx, rec.id, "test")
		require.NoError(t, err)
		defer release()
		require.NoError(t, st.create(ctx, rec, grove.Binding{}, false, false))
		for i := range 5 {
			require.NoError(t, st.journal(ctx, rec.id, EventTurnStarted, map[string]any{"turn": i}))
		}
		evs, err := st.events(ctx, rec.id)
		require.NoError(t, err)
		require.Len(t, evs, 6)
		for i, ev := range evs {
			assert.Equal(t, int64(i+1), int64(ev.Seq))
		}
		assert.JSONEq(t, `{"turn":4}`, string(evs[5].Payload))
		for _, q := range []string{`UPDATE events SET kind = 'x'`, `DELETE FROM events`} {
			_, err := st.db.ExecContext(ctx, q)
			assert.ErrorContains(t, err, "append-only", q)
		}
		if _, ok := st.dialect.(*pgDialect); ok {
			_, err := st.db.ExecContext(ctx, `TRUNCATE events CASCADE`)
			assert.ErrorContains(t, err, "append-only")
		}
		evs2, err := st.events(ctx, rec.id)
		require.NoError(t, err)
		assert.Equal(t, evs, evs2)
	})

	t.Run("Migrations", func(t *testing.T) {
		tg := fresh(t)
		// Hosts opening a new database together migrate it once.
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Go(func() {
				st, err := openTestStore(ctx, tg.path, tg.leaseDir)
				if err == nil {
					err = st.close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		st := tg.open(t)
		var v int
		if _, ok := st.dialect.(*pgDialect); ok {
			require.NoError(t, st.db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v))
			assert.Equal(t, PostgresSchemaVersion, v)
			// A schema from a newer grove is refused, and left as it is.
			_, err := st.db.ExecContext(ctx, `UPDATE schema_version SET version = version + 1`)
			require.NoError(t, err)
			_, err = openTestStore(ctx, tg.path, tg.leaseDir)
			var se *StoreError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, SchemaTooNew, se.Kind)
			assert.NotContains(t, err.Error(), "password")
		} else {
			require.NoError(t, st.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v))
			assert.Equal(t, SchemaVersion, v)
		}
	})

	t.Run("ConcurrentClaimsFromManyConnections", func(t *testing.T) {
		tg := fresh(t)
		const hosts, perHost = 4, 4
		stores := make([]*sqlStore, hosts)
		for i := range stores {
			stores[i] = tg.open(t)
		}
		// Every session races for the same head, from its own connection;
		// none holds a lease, and none asks for a take-over.
		bind := testBinding(uuid.NewString())
		// race makes hosts*perHost sessions on the head at once, each from
		// its host's connections, and counts the winners and the refused.
		race := func(takeOver bool) (won, bound int) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			for i := range hosts * perHost {
				wg.Go(func() {
					err := stores[i%hosts].create(ctx, testRecord(fmt.Sprint(i)), bind, true, takeOver)
					mu.Lock()
					defer mu.Unlock()
					switch grove.CodeOf(err) {
					case grove.OK:
						won++
					case grove.AlreadyBound:
						bound++
					default:
						t.Errorf("session %d (take-over %v): %v", i, takeOver, err)
					}
				})
			}
			wg.Wait()
			return won, bound
		}
		won, bound := race(false)
		assert.Equal(t, 1, won, "exactly one session holds the head")
		assert.Equal(t, hosts*perHost-1, bound)

		// Take-overs racing for a dead session's claim: one wins.
		won, _ = race(true)
		// Each take-over wins from a holder that is not live; a later
		// one may take over from an earlier winner, which holds no
		// lease either. What may never happen is two claims at once.
		assert.GreaterOrEqual(t, won, 1)
		var n int
		require.NoError(t, stores[0].db.QueryRowContext(ctx, stores[0].q(`SELECT COUNT(*) FROM claims WHERE head = ?`), string(bind.Head)).Scan(&n))
		assert.Equal(t, 1, n)

		// Journal appends to one session from many goroutines of its
		// holder at once (over its pool of connections): a gapless
		// sequence. Another host's append is refused: it does not hold
		// the session's lease.
		rec := testRecord("busy")
		release, _, err := stores[0].lease(ctx, rec.id, "test")
		require.NoError(t, err)
		defer release()
		require.NoError(t, stores[0].create(ctx, rec, grove.Binding{}, false, false))
		var wg sync.WaitGroup
		for i := range hosts * perHost {
			wg.Go(func() {
				assert.NoError(t, stores[0].journal(ctx, rec.id, EventTurnStarted, map[string]any{"turn": i}))
			})
		}
		wg.Wait()
		if _, ok := stores[1].dialect.(*pgDialect); ok {
			err := stores[1].journal(ctx, rec.id, EventTurnStarted, nil)
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
		}
		evs, err := stores[0].events(ctx, rec.id)
		require.NoError(t, err)
		require.Len(t, evs, hosts*perHost+1)
		for i, ev := range evs {
			assert.Equal(t, int64(i+1), int64(ev.Seq))
		}
	})

	t.Run("LeasesDieWithTheirHolder", func(t *testing.T) {
		tg := fresh(t)
		st := tg.open(t)
		id := uuid.NewString()
		rec := testRecord("held")
		rec.id = id
		require.NoError(t, st.create(ctx, rec, testBinding(uuid.NewString()), true, false))
		// Another process holds the lease: Busy here, live everywhere.
		spec, _ := json.Marshal(map[string]string{"Path": tg.path, "LeaseDir": tg.leaseDir, "ID": id})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "GROVE_TEST_LEASE_HOLDER="+string(spec))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "held\n", line)
		_, _, err = st.lease(ctx, id, "test")
		assert.Equal(t, grove.Busy, grove.CodeOf(err), "%v", err)
		infos, err := st.sessions(ctx, sessionQuery{id: id})
		require.NoError(t, err)
		assert.True(t, infos[0].Live)
		// In this process a second lease on one session is Busy too.
		other := uuid.NewString()
		release, _, err := st.lease(ctx, other, "test")
		require.NoError(t, err)
		_, _, err = st.lease(ctx, other, "test")
		assert.Equal(t, grove.Busy, grove.CodeOf(err))
		require.NoError(t, release())
		release, _, err = st.lease(ctx, other, "test")
		require.NoError(t, err)
		require.NoError(t, release())

		// The holder dies without releasing anything: the lease is free.
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		deadline := time.Now().Add(30 * time.Second)
		for {
			release, _, err = st.lease(ctx, id, "test")
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond) // the server notices the closed connection
		}
		require.NoError(t, err)
		infos, err = st.sessions(ctx, sessionQuery{id: id})
		require.NoError(t, err)
		assert.True(t, infos[0].Live, "live again: this process holds it")
		require.NoError(t, release())
		infos, err = st.sessions(ctx, sessionQuery{id: id})
		require.NoError(t, err)
		assert.False(t, infos[0].Live)
		// The claim outlived its holder: it is still there.
		assert.True(t, infos[0].Claims)
	})

	// A kernel file lock is lost only with its process: only a lease on a
	// connection can be lost by a holder that lives on.
	t.Run("ALostLeaseIsFenced", func(t *testing.T) {
		tg := fresh(t)
		a, b := tg.open(t), tg.open(t)
		if _, ok := a.dialect.(*pgDialect); !ok {
			// Nothing to lose: the holder's writes go on, as they must.
			release, _, err := a.lease(ctx, "3c0e8b5a-6f1d-4d2e-9a7b-1c2d3e4f5a6b", "test")
			require.NoError(t, err)
			defer release()
			rec := testRecord("kept")
			rec.id = "3c0e8b5a-6f1d-4d2e-9a7b-1c2d3e4f5a6b"
			require.NoError(t, a.create(ctx, rec, grove.Binding{}, false, false))
			require.NoError(t, a.journal(ctx, rec.id, EventTurnStarted, nil))
			return
		}
		rec := testRecord("fenced")
		releaseA, _, err := a.lease(ctx, rec.id, "test")
		require.NoError(t, err)
		defer releaseA()
		require.NoError(t, a.create(ctx, rec, grove.Binding{}, false, false))
		require.NoError(t, a.journal(ctx, rec.id, EventTurnStarted, nil))
		// The server ends a's lease connection (a restart, a timeout, an
		// administrator): a lives on, its lease is gone, and b takes it.
		a.dialect.(*pgDialect).mu.Lock()
		pid := a.dialect.(*pgDialect).pid
		a.dialect.(*pgDialect).mu.Unlock()
		_, err = b.db.ExecContext(ctx, `SELECT pg_terminate_backend($1)`, int64(pid))
		require.NoError(t, err)
		var releaseB func() error
		require.Eventually(t, func() bool {
			releaseB, _, err = b.lease(ctx, rec.id, "test")
			return err == nil
		}, 30*time.Second, 20*time.Millisecond)
		defer releaseB()
		for _, write := range []func() error{
			func() error { return a.journal(ctx, rec.id, EventTurnStarted, nil) },
			func() error { return a.setLast(ctx, rec.id, "beef", EventCheckpointed, nil) },
			func() error { return a.closeSession(ctx, rec.id) },
		} {
			err := write()
			assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "%v", err)
		}
		require.NoError(t, b.journal(ctx, rec.id, EventResumed, nil))
		evs, err := b.events(ctx, rec.id)
		require.NoError(t, err)
		assert.Equal(t, []EventKind{EventBound, EventTurnStarted, EventResumed}, kinds(evs))
	})
}

// On PostgreSQL, liveness is never asked on the lease connection: a
// listing and a take-over answer while that connection is in the middle of
// a round trip (held here: a reconnect, a slow heartbeat), and say a
// session held by another connection is live and an unheld one is not.
func TestPostgresLivenessNeverWaitsForTheLeaseConnection(t *testing.T) {
	ctx := context.Background()
	tg := storeTarget{path: PostgresDatabase(t)}
	st, other := tg.open(t), tg.open(t)
	held, free := testRecord("held"), testRecord("free")
	headA, headB := testBinding(uuid.NewString()), testBinding(uuid.NewString())
	require.NoError(t, st.create(ctx, held, headA, true, false))
	require.NoError(t, st.create(ctx, free, headB, true, false))
	release, _, err := other.lease(ctx, held.id, "test")
	require.NoError(t, err)
	defer release()

	d := st.dialect.(*pgDialect)
	d.connMu.Lock()
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			infos, err := st.sessions(ctx, sessionQuery{})
			if err != nil {
				return err
			}
			live := map[string]bool{}
			for _, si := range infos {
				live[si.ID] = si.Live
			}
			if !live[held.id] || live[free.id] {
				return fmt.Errorf("live: %v, want only %s", live, held.id)
			}
			// The unheld session's claim passes to a newcomer.
			return st.create(ctx, testRecord("newcomer"), headB, true, true)
		}()
	}()
	select {
	case err := <-done:
		d.connMu.Unlock()
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		d.connMu.Unlock()
		t.Fatal("a liveness look waited for the lease connection")
	}
}
