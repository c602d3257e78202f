package engine

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/groveworks/grove"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL store keeps the same tables as the SQLite store, in the
// schema "grove" of the database the URL names, so that every host of a
// fleet shares one set of sessions, bindings, claims and journals. Its
// schema has its own numbered migrations (pgMigrations), recorded in
// grove.schema_version and applied under a transaction-level advisory
// lock, so hosts starting together migrate once.
//
// A session's lease is a session-level advisory lock held on the engine's
// own lease connection: PostgreSQL releases it when that connection ends,
// which it does when the holding process dies, as the kernel releases a
// file lock. Any host sees it in pg_locks. The connection can also end
// while the process lives (a server restart, a partition): a heartbeat
// makes it again and takes the leases back when no other host took them,
// and fence refuses a session's writes once its lease is not this
// connection's.

// pgMigrations are the PostgreSQL schema's numbered steps, as migrations
// are SQLite's: never edited once released.
var pgMigrations = []string{
	// 1: what SQLite's migrations 1 to 3 make.
	`CREATE TABLE sessions (
		id              text PRIMARY KEY,
		agent           text NOT NULL DEFAULT '',
		placement       text NOT NULL,
		config_digest   text NOT NULL,
		state           text NOT NULL CHECK (state IN ('open', 'closed')),
		last_checkpoint text NOT NULL DEFAULT '',
		created_at      text NOT NULL,
		updated_at      text NOT NULL,
		permission      text NOT NULL DEFAULT '',
		snapshot        text NOT NULL DEFAULT '',
		config          bytea,
		policy          text NOT NULL DEFAULT '',
		roots           text NOT NULL DEFAULT ''
	);
	CREATE TABLE bindings (
		session_id text PRIMARY KEY REFERENCES sessions(id),
		backend    text NOT NULL,
		binding    bytea NOT NULL
	);
	CREATE TABLE claims (
		backend    text NOT NULL,
		workspace  text NOT NULL,
		head       text NOT NULL,
		session_id text NOT NULL REFERENCES sessions(id),
		claimed_at text NOT NULL,
		PRIMARY KEY (backend, workspace, head)
	);
	CREATE INDEX claims_by_session ON claims(session_id);
	CREATE TABLE events (
		session_id text NOT NULL REFERENCES sessions(id),
		seq        bigint NOT NULL,
		at         text NOT NULL,
		kind       text NOT NULL,
		payload    text NOT NULL DEFAULT '{}',
		PRIMARY KEY (session_id, seq)
	);
	CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'events are append-only'; END $$;
	CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
		FOR EACH ROW EXECUTE FUNCTION events_append_only();
	CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
		FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();`,
	// 2: fencing tokens, as SQLite's migration 4.
	`ALTER TABLE sessions ADD COLUMN generation bigint NOT NULL DEFAULT 0;
	ALTER TABLE events ADD COLUMN generation bigint NOT NULL DEFAULT 0;`,
}

// PostgresSchemaVersion is the PostgreSQL schema version this engine
// writes.
var PostgresSchemaVersion = len(pgMigrations)

// pgSchema is the PostgreSQL schema grove's tables live in.
const pgSchema = "grove"

// pgPoolSize bounds an engine's connections for transactions; its lease
// connection is one more. A fleet of hosts needs hosts × (pgPoolSize+1)
// of the server's max_connections.
const pgPoolSize = 4

// isPostgresURL reports whether Options.Path names a PostgreSQL database.
func isPostgresURL(path string) bool {
	return strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://")
}

// redactURL is u with its password replaced, as errors show it.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return p.Redacted()
}

// defaultLocalDir is where an engine on a PostgreSQL store keeps its
// host-local lock files (the roots' compare-and-set locks) when
// Options.LeaseDir names none: one directory per database, under the
// user's cache directory.
func defaultLocalDir(u string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(redactURL(u)))
	return filepath.Join(base, "grove", fmt.Sprintf("pg-%x", sum[:8]))
}

// openPostgresStore connects to the database rawURL names, applies the
// migrations it lacks and opens the lease connection. A URL pgx cannot
// parse is InvalidArgument; a server that cannot be reached or refuses
// the login is a *StoreError of kind StoreInaccessible; a schema newer
// than this engine's is SchemaTooNew.
func openPostgresStore(ctx context.Context, rawURL string, leaseTimeout time.Duration) (*sqlStore, error) {
	name := redactURL(rawURL)
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, errorf(grove.InvalidArgument, "open", "database URL %s: %v", name, err)
	}
	host, _ := os.Hostname()
	// Each engine its own name, the unit a fleet counts as a host: its
	// own part first, since the server keeps 63 bytes of it.
	cfg.RuntimeParams["application_name"] = fmt.Sprintf("grove %s pid %d %s", uuid.NewString()[:8], os.Getpid(), host)
	if leaseTimeout <= 0 {
		leaseTimeout = DefaultLeaseTimeout
	}
	// Every connection's settings, made once it is up rather than as
	// startup parameters, which a pooler such as PgBouncer refuses or
	// drops: grove's schema, and a transaction left open longer than the
	// lease timeout (its host paused in the middle of a write) ended by
	// the server, with the row locks it held, so that the next holder of
	// its session waits no longer.
	cfg.AfterConnect = func(ctx context.Context, conn *pgconn.PgConn) error {
		return conn.Exec(ctx, fmt.Sprintf("SET search_path = %s; SET idle_in_transaction_session_timeout = %d", pgSchema, leaseTimeout.Milliseconds())).Close()
	}
	fail := func(kind StoreKind, err error) error { return storeFailure(name, err, kind) }
	if err := ownConnections(ctx, cfg, name); err != nil {
		return nil, err
	}
	if err := pgMigrate(ctx, cfg); err != nil {
		var se *StoreError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, fail(StoreFailed, err)
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(pgPoolSize)
	db.SetMaxIdleConns(pgPoolSize)
	d := &pgDialect{cfg: cfg, name: name, ttl: leaseTimeout, held: map[string]bool{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	d.connMu.Lock()
	_, err = d.leaseConn(ctx)
	d.connMu.Unlock()
	if err != nil {
		if d.conn != nil {
			_ = d.conn.Close(context.WithoutCancel(ctx))
		}
		_ = db.Close()
		return nil, err
	}
	go d.heartbeat()
	return &sqlStore{db: db, path: name, dialect: d}, nil
}

// ownConnections fails when the server connections behind the URL serve
// more than one client each: a pooler sharing server connections between
// transactions or statements (PgBouncer's transaction or statement mode)
// hands the server connection a first client has just let go of to the
// next one, while through a pooler in session mode, or none, each client
// has a server process of its own. It asks in the simple protocol, which
// such a pooler lets through.
func ownConnections(ctx context.Context, cfg *pgx.ConnConfig, name string) error {
	cfg = cfg.Copy()
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.AfterConnect = nil
	var pids [2]uint32
	for i := range pids {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return storeFailure(name, err, StoreInaccessible)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pids[i]); err != nil {
			return storeFailure(name, err, StoreFailed)
		}
	}
	if pids[0] == pids[1] {
		return &StoreError{Kind: StoreSharedConnections, Path: name,
			Err: fmt.Errorf("two connections were served by one server process (%d): the URL leads through a pooler in transaction or statement mode, through which grove's leases (session-level advisory locks) do not hold; point it at the server, or at a pool in session mode", pids[0])}
	}
	return nil
}

// pgMigrate brings the schema up to date on one connection, in one
// transaction holding an advisory lock, so that concurrent first opens
// from many hosts migrate once.
func pgMigrate(ctx context.Context, cfg *pgx.ConnConfig) error {
	name := redactURL(cfg.ConnString())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return storeFailure(name, err, StoreInaccessible)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey("grove migrate")); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgSchema+`;
		CREATE TABLE IF NOT EXISTS `+pgSchema+`.schema_version (
			one     boolean PRIMARY KEY DEFAULT true CHECK (one),
			version integer NOT NULL
		)`); err != nil {
		return err
	}
	var v int
	err = tx.QueryRow(ctx, `SELECT version FROM `+pgSchema+`.schema_version`).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := tx.Exec(ctx, `INSERT INTO `+pgSchema+`.schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if v > PostgresSchemaVersion {
		return &StoreError{Kind: SchemaTooNew, Path: name, Err: fmt.Errorf("schema version %d is newer than this engine's %d", v, PostgresSchemaVersion)}
	}
	for ; v < PostgresSchemaVersion; v++ {
		if _, err := tx.Exec(ctx, pgMigrations[v]); err != nil {
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE `+pgSchema+`.schema_version SET version = $1`, v); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// lockKey is the 64-bit advisory lock key of name. Two names sharing a
// key (a chance of about n²/2⁶⁵ among n names) would only make one wait
// for, or look as live as, the other; they never share a claim.
func lockKey(name string) int64 {
	sum := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

func leaseKey(id string) int64 { return lockKey("grove session lease " + id) }

// pgDialect is the PostgreSQL store's dialect.
type pgDialect struct {
	cfg  *pgx.ConnConfig
	name string // the URL without its password

	// connMu serializes the use of conn, which is one connection: the
	// round trips that take, release and keep leases wait for each other.
	// Nothing else waits for them: live and fence read held and pid under
	// mu, which is never held across a round trip.
	connMu sync.Mutex
	conn   *pgx.Conn // the lease connection
	ttl    time.Duration

	mu   sync.Mutex
	pid  uint32          // conn's server process, which pg_locks names as the holder
	held map[string]bool // the sessions whose lease this process holds

	stop, stopped chan struct{} // the heartbeat's
}

// DefaultLeaseTimeout is Options.LeaseTimeout's default.
const DefaultLeaseTimeout = 30 * time.Second

// heartbeat checks the lease connection every quarter of the lease
// timeout until closeDialect.
func (d *pgDialect) heartbeat() {
	defer close(d.stopped)
	t := time.NewTicker(d.ttl / 4)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		d.beat()
	}
}

// beat checks the lease connection once: a lost one is made again at
// once and the leases it held taken back, unless another host took them
// meanwhile (those sessions are then fenced). A lease taken back after
// another host took the session and let it go again is fenced too: that
// host took the next generation.
func (d *pgDialect) beat() {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.ttl/2)
	defer cancel()
	if d.conn != nil && !d.conn.IsClosed() && d.conn.Ping(ctx) != nil {
		_ = d.conn.Close(ctx)
	}
	if d.conn == nil || d.conn.IsClosed() {
		_, _ = d.leaseConn(ctx)
	}
}

// q numbers the placeholders: ? becomes $1, $2, ... (grove's queries have
// no ? in their literals).
func (*pgDialect) q(query string) string {
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// serialize takes a transaction-level advisory lock on key, in the
// two-key space (objsubid 2), apart from the leases' one-key space.
func (*pgDialect) serialize(ctx context.Context, tx *sql.Tx, key string) error {
	k := lockKey(key)
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(k>>32), int32(k))
	return err
}

// leaseConn returns the lease connection, connecting again when it was
// lost and then taking back the leases this process held (a lease another
// host took meanwhile is lost; that session's claim may have passed on).
// d.connMu is held.
func (d *pgDialect) leaseConn(ctx context.Context) (*pgx.Conn, error) {
	if d.conn != nil && !d.conn.IsClosed() {
		return d.conn, nil
	}
	conn, err := pgx.ConnectConfig(ctx, d.cfg)
	if err != nil {
		return nil, storeFailure(d.name, err, StoreInaccessible)
	}
	// The server ends the connection, and with it the leases, once it
	// has been idle for the lease timeout: a host paused or cut off
	// longer than that loses its sessions, as a dead one does. The
	// heartbeat keeps a live host's connection busier than that.
	var pid uint32
	_, err = conn.Exec(ctx, fmt.Sprintf("SET idle_session_timeout = %d", d.ttl.Milliseconds()))
	if err == nil {
		// The server process, as pg_locks names it (a pooler in between
		// gives the client another number).
		err = conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid)
	}
	if err != nil {
		_ = conn.Close(ctx)
		return nil, storeFailure(d.name, err, StoreFailed)
	}
	d.mu.Lock()
	d.pid = pid
	held := slices.Collect(maps.Keys(d.held))
	d.mu.Unlock()
	d.conn = conn
	for _, id := range held {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leaseKey(id)).Scan(&ok); err != nil || !ok {
			d.mu.Lock()
			delete(d.held, id)
			d.mu.Unlock()
		}
	}
	return conn, nil
}

// holds reports whether this process holds session id's lease.
func (d *pgDialect) holds(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.held[id]
}

func (d *pgDialect) lease(ctx context.Context, id, purpose string) (func() error, error) {
	const op = "engine: lease"
	d.connMu.Lock()
	defer d.connMu.Unlock()
	if d.holds(id) {
		return nil, &grove.Error{Code: grove.Busy, Op: op, Path: d.name, Err: fmt.Errorf("session %s is live in this process", id)}
	}
	conn, err := d.leaseConn(ctx)
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leaseKey(id)).Scan(&ok); err != nil {
		return nil, storeFailure(d.name, err, StoreFailed)
	}
	if !ok {
		return nil, &grove.Error{Code: grove.Busy, Op: op, Path: d.name, Err: fmt.Errorf("session %s is live: %s holds its lease", id, d.holder(ctx, conn, id))}
	}
	d.mu.Lock()
	d.held[id] = true
	d.mu.Unlock()
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() { err = d.unlease(id) })
		return err
	}, nil
}

// holder names the connection holding session id's lease, as its
// application_name says (grove sets it to the host and process).
func (d *pgDialect) holder(ctx context.Context, conn *pgx.Conn, id string) string {
	k := leaseKey(id)
	var who string
	err := conn.QueryRow(ctx, `SELECT a.application_name || ' (' || coalesce(host(a.client_addr), 'local') || ')'
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid::bigint = $1 AND l.objid::bigint = $2 LIMIT 1`, int64(uint32(k>>32)), int64(uint32(k))).Scan(&who)
	if err != nil || who == "" {
		return "another connection"
	}
	return who
}

// unlease releases session id's lease.
func (d *pgDialect) unlease(id string) error {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	d.mu.Lock()
	mine := d.held[id]
	delete(d.held, id)
	d.mu.Unlock()
	if !mine {
		return nil // lost with the lease connection
	}
	if d.conn == nil || d.conn.IsClosed() {
		return nil // released with the connection
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
	defer cancel()
	if _, err := d.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, leaseKey(id)); err != nil {
		// The lease may still be held: end the connection, which
		// releases it for certain.
		_ = d.conn.Close(ctx)
		return storeFailure(d.name, err, StoreFailed)
	}
	return nil
}

// leaseHeld is the query of who holds a lease: any connection, or ($3 not
// zero) the one with that server process.
const leaseHeld = `SELECT EXISTS (SELECT 1 FROM pg_locks
	WHERE locktype = 'advisory' AND granted AND objsubid = 1
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND classid::bigint = $1 AND objid::bigint = $2 AND ($3 = 0 OR pid = $3))`

// live reports whether a connection of any host holds session id's lease,
// asking through q (the caller's transaction, or the pool): never on the
// lease connection, whose round trips it does not wait for. A failed look
// counts as live: a claim is never taken on a guess (and a transaction
// whose query failed is rolled back by its caller).
func (d *pgDialect) live(ctx context.Context, q queryer, id string) bool {
	if d.holds(id) {
		return true
	}
	k := leaseKey(id)
	var held bool
	err := q.QueryRowContext(ctx, leaseHeld, int64(uint32(k>>32)), int64(uint32(k)), 0).Scan(&held)
	return err != nil || held
}

// holders reads every session lease held in the database in one query,
// with the holding connection's application_name (grove sets it to the
// host and process).
func (d *pgDialect) holders(ctx context.Context, db *sql.DB, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT l.classid::bigint, l.objid::bigint, coalesce(a.application_name, '')
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byKey := map[int64]string{}
	for rows.Next() {
		var hi, lo int64
		var who string
		if err := rows.Scan(&hi, &lo, &who); err != nil {
			return nil, err
		}
		byKey[hi<<32|lo] = who
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	me := d.cfg.RuntimeParams["application_name"]
	for _, id := range ids {
		k := leaseKey(id)
		if who, ok := byKey[int64(uint64(uint32(k>>32))<<32|uint64(uint32(k)))]; ok {
			out[id] = who
		} else if d.holds(id) {
			out[id] = me
		}
	}
	return out, nil
}

// hosts names the grove engines connected to the database: the distinct
// application names of its connections that grove set.
func (d *pgDialect) hosts(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT application_name FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'grove %' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// fence fails unless this process's lease connection holds session id's
// lease now, as the server says.
func (d *pgDialect) fence(ctx context.Context, tx *sql.Tx, id string) error {
	d.mu.Lock()
	mine, pid := d.held[id], d.pid
	d.mu.Unlock()
	held := false
	if mine {
		k := leaseKey(id)
		if err := tx.QueryRowContext(ctx, leaseHeld, int64(uint32(k>>32)), int64(uint32(k)), int64(pid)).Scan(&held); err != nil {
			return err
		}
	}
	if !held {
		return &grove.Error{Code: grove.FailedPrecondition, Op: "engine: store", Path: d.name,
			Err: fmt.Errorf("session %s no longer holds its lease (this host's database connection ended): another host may have resumed it, and this one writes nothing more for it", id)}
	}
	return nil
}

func (d *pgDialect) closeDialect() error {
	close(d.stop)
	<-d.stopped
	d.connMu.Lock()
	defer d.connMu.Unlock()
	d.mu.Lock()
	clear(d.held)
	d.mu.Unlock()
	if d.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return d.conn.Close(ctx)
}

// pgKind classifies an error of the PostgreSQL store: StoreInaccessible
// for a server that cannot be reached, a login refused or a database
// that does not exist; "" for anything else.
func pgKind(err error) StoreKind {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return StoreInaccessible
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000" || pe.Code == "42501") {
		return StoreInaccessible
	}
	return ""
}

// pgBusy reports whether err is PostgreSQL's answer to contention: a
// deadlock it broke, a serialization failure, a lock not available.
func pgBusy(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001" || pe.Code == "55P03")
}
