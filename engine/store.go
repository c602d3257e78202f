package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/lock"
)

// migrations are the schema's numbered steps; migration i (from 1) takes
// the schema from version i-1 to i. They are never edited once released:
// a change is a new migration.
var migrations = []string{
	// 1: sessions, their bindings, claims on isolated heads, the journal.
	`CREATE TABLE sessions (
		id            TEXT PRIMARY KEY,
		agent         TEXT NOT NULL DEFAULT '',
		placement     TEXT NOT NULL,
		config_digest TEXT NOT NULL,
		state         TEXT NOT NULL CHECK (state IN ('open', 'closed')),
		last_checkpoint TEXT NOT NULL DEFAULT '',
		created_at    TEXT NOT NULL,
		updated_at    TEXT NOT NULL
	) STRICT;
	CREATE TABLE bindings (
		session_id TEXT PRIMARY KEY REFERENCES sessions(id),
		backend    TEXT NOT NULL,
		binding    BLOB NOT NULL
	) STRICT;
	CREATE TABLE claims (
		backend    TEXT NOT NULL,
		workspace  TEXT NOT NULL,
		head       TEXT NOT NULL,
		session_id TEXT NOT NULL REFERENCES sessions(id),
		claimed_at TEXT NOT NULL,
		PRIMARY KEY (backend, workspace, head)
	) STRICT;
	CREATE INDEX claims_by_session ON claims(session_id);
	CREATE TABLE events (
		session_id TEXT NOT NULL REFERENCES sessions(id),
		seq        INTEGER NOT NULL,
		at         TEXT NOT NULL,
		kind       TEXT NOT NULL,
		payload    TEXT NOT NULL DEFAULT '{}',
		PRIMARY KEY (session_id, seq)
	) STRICT;
	CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
		BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
	CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
		BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;`,
	// 2: what a session was bound with, so that it can be listed and
	// resumed with the configuration it recorded.
	`ALTER TABLE sessions ADD COLUMN permission TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN snapshot TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN config BLOB;`,
	// 3: the path policy and the extra roots a session was bound with.
	`ALTER TABLE sessions ADD COLUMN policy TEXT NOT NULL DEFAULT '';
	ALTER TABLE sessions ADD COLUMN roots TEXT NOT NULL DEFAULT '';`,
	// 4: fencing tokens. A session's generation grows by one each time a
	// process takes its lease; a live session's writes name the
	// generation it holds and are refused once it is not the session's.
	// Each event records the generation it was written under.
	`ALTER TABLE sessions ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE events ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;`,
}

// SchemaVersion is the schema version this engine writes.
var SchemaVersion = len(migrations)

var sqliteMagic = []byte("SQLite format 3\x00")

// openStore opens (creating if absent) the database at path and brings its
// schema up to date. A file that is not SQLite, is malformed, or whose
// schema is newer than this engine's, is a *StoreError, and nothing is
// written to it; an ended ctx is Canceled.
func openStore(ctx context.Context, path string) (*sql.DB, error) {
	fail := func(kind StoreKind, err error) error { return storeFailure(path, err, kind) }
	if !haveSQLite {
		return nil, fail(NoSQLite, errors.New("this grove was built with CGO_ENABLED=0; the SQLite store needs cgo and a C compiler"))
	}
	// A new database is made whole beside its place and linked there
	// (see createStore): a file grove opens is never one it is still
	// making, so an empty one was emptied since.
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fail(StoreInaccessible, err)
		}
		if err := createStore(ctx, path); err != nil {
			return nil, fail(StoreFailed, err)
		}
	}
	// Look before SQLite touches the file: opening in WAL mode writes.
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(StoreInaccessible, err)
	}
	header := make([]byte, 100)
	n, rerr := io.ReadFull(f, header)
	_ = f.Close()
	switch {
	case n == 0:
		return nil, fail(StoreCorrupt, errors.New("the database file is empty (truncated, or written by something else than grove): its sessions are gone from it; restore it from a backup, or move it aside to start an empty one"))
	case rerr != nil || !bytes.Equal(header[:len(sqliteMagic)], sqliteMagic):
		return nil, fail(NotADatabase, errors.New("the file is not an SQLite database"))
	}
	v, err := readVersion(ctx, path, header)
	if err != nil {
		return nil, fail(NotADatabase, err)
	}
	if v > SchemaVersion {
		return nil, fail(SchemaTooNew, fmt.Errorf("schema version %d is newer than this engine's %d", v, SchemaVersion))
	}
	db, err := sql.Open("sqlite3", sqliteDSN(path))
	if err != nil {
		return nil, fail(StoreFailed, err)
	}
	// Processes opening a new database together: the first to connect
	// turns on WAL mode, which SQLite refuses (busy, without waiting) to
	// the others meanwhile. They try again, within the busy timeout.
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := migrate(ctx, db)
		if err == nil {
			return db, nil
		}
		if !sqliteBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			_ = db.Close()
			return nil, fail(StoreFailed, err)
		}
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
	}
}

// sqliteDSN is how the store opens the SQLite file at path: WAL mode,
// synchronous writes, a busy timeout, foreign keys, transactions that
// take the write lock when they begin.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	return "file:" + url.PathEscape(path) + "?" + q.Encode()
}

// createStore makes the database at path, which does not exist: in a
// file of its own beside it, with the whole schema, then hard-linked into
// place, so that no process ever sees a half-made database there. Of two
// processes making it at once, one links its file; the other finds the
// place taken and uses that one.
func createStore(ctx context.Context, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_ = tmp.Close()
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			_ = os.Remove(name + suffix)
		}
	}()
	db, err := sql.Open("sqlite3", sqliteDSN(name))
	if err != nil {
		return err
	}
	err = migrate(ctx, db)
	if cerr := db.Close(); err == nil {
		err = cerr // closing the last connection moves the log into the file
	}
	if err != nil {
		return err
	}
	err = os.Link(name, path)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, fs.ErrPermission):
		// A file system without hard links: renamed, unless another
		// process made it meanwhile.
		if _, lerr := os.Lstat(path); errors.Is(lerr, fs.ErrNotExist) {
			return os.Rename(name, path)
		}
		return nil
	}
	return err
}

// readVersion reads the schema version of an existing database without
// writing to it: from the file header (user_version, offset 60), or, when
// a write-ahead log may hold a newer header, through a read-only
// connection.
func readVersion(ctx context.Context, path string, header []byte) (int, error) {
	if st, err := os.Stat(path + "-wal"); err != nil || st.Size() == 0 {
		return int(binary.BigEndian.Uint32(header[60:64])), nil
	}
	db, err := sql.Open("sqlite3", "file:"+url.PathEscape(path)+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var v int
	err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// migrate applies the migrations the database lacks, each in its own
// transaction with the version bump.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			_ = tx.Rollback()
			return err
		}
		if v > SchemaVersion {
			_ = tx.Rollback()
			return fmt.Errorf("schema version %d is newer than this engine's %d", v, SchemaVersion)
		}
		if v == SchemaVersion {
			return tx.Rollback()
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("migration %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
}

// schema returns the database's schema as SQL, one object per statement,
// sorted by name: what the golden file pins.
func schema(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, "SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY type, name")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b bytes.Buffer
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		b.WriteString(s)
		b.WriteString(";\n\n")
	}
	return b.String(), rows.Err()
}

// store is where an engine keeps its sessions, their bindings, the claims
// on heads, the append-only journal and the sessions' leases. Every method
// is one transaction: it happens entirely or not at all. The SQLite store
// is the embedded default; the PostgreSQL store, for a fleet of hosts, is
// the same sqlStore on another dialect. storeSuite (store_suite_test.go)
// is the contract both pass.
//
// A failure of the store itself is a *StoreError (or Canceled when ctx
// ended); an AlreadyBound *grove.Error from create or claim means the
// head is claimed by a live session, or by a dead one without takeOver.
type store interface {
	// create persists a new session, its binding (none for a headless
	// session), its claim when claim is set, its "bound" event and, for a
	// fork (rec.parent set), the parent's "forked" event.
	create(ctx context.Context, rec sessionRecord, bind grove.Binding, claim, takeOver bool) error
	// load reads a session and its stored binding (nil for a headless
	// session); an unknown ID is errNoSession.
	load(ctx context.Context, id string) (sessionRecord, []byte, error)
	// claim records that session id holds the head bind names.
	claim(ctx context.Context, id string, bind grove.Binding) error
	// The writes of a live session's own record — reopen, setLast,
	// rebind, journal, closeSession — are fenced: they fail with
	// FailedPrecondition unless this process still holds the session's
	// lease and the generation it took with it is still the session's.
	//
	// reopen marks a resumed session open and journals kind.
	reopen(ctx context.Context, id string, kind EventKind, payload any) error
	// setLast makes commit the session's last checkpoint and journals
	// kind with payload.
	setLast(ctx context.Context, id string, commit grove.CheckpointID, kind EventKind, payload any) error
	// rebind replaces the session's binding with bind, makes commit its
	// last checkpoint and journals kind with payload: a head that moved.
	rebind(ctx context.Context, id string, bind grove.Binding, commit grove.CheckpointID, kind EventKind, payload any) error
	// journal appends one event.
	journal(ctx context.Context, id string, kind EventKind, payload any) error
	// closeSession releases the session's claims, marks it closed and
	// journals "closed", its last event until it is resumed.
	closeSession(ctx context.Context, id string) error
	// events reads a session's journal, in order.
	events(ctx context.Context, id string) ([]Event, error)
	// sessions lists the sessions q selects, oldest first (an unknown
	// q.id is errNoSession).
	sessions(ctx context.Context, q sessionQuery) ([]SessionInfo, error)
	// openJournals reads the last checkpoint of every open session and
	// the payloads of its journal's events (a row each, in no order).
	openJournals(ctx context.Context) (lasts, payloads []string, err error)
	// lease takes session id's lease without waiting (Busy when anyone
	// holds it, this process included) and then the session's next
	// generation, its fencing token: from then on, the writes of every
	// earlier holder are refused. A live session holds its lease; it
	// dies with its holder.
	lease(ctx context.Context, id, purpose string) (release func() error, generation int64, err error)
	// hosts names the engines connected to the store now (nil when the
	// store cannot tell).
	hosts(ctx context.Context) ([]string, error)
	// close releases the store.
	close() error
}

// errNoSession is store.load's answer for an unknown session ID.
var errNoSession = errors.New("no such session")

// sessionRecord is a session as the store keeps it.
type sessionRecord struct {
	id, agent, placement, digest string
	kind                         HeadPlacement // the placement's kind, decoded (see decodePlacement)
	lastCheckpoint               grove.CheckpointID
	state                        string // open or closed
	parent                       string // for a new fork: the session it was forked from
	perm                         Permission
	snap                         SnapshotPolicy
	config                       []byte
	policy                       []Policy
	roots                        []Root
}

// sqliteDialect is the embedded store's: SQLite's immediate transactions
// serialize writers, and a lease is a kernel file lock in the lease
// directory, which dies with its process.
type sqliteDialect struct{ leaseDir string }

func (sqliteDialect) q(query string) string { return query }

func (sqliteDialect) serialize(context.Context, *sql.Tx, string) error { return nil }

// leasePath is the lease file of session id. Only an ID the engine makes
// (a canonical UUID) ever becomes part of a path: callers check IDs read
// from the database with validSessionID first.
func (d sqliteDialect) leasePath(id string) string {
	return filepath.Join(d.leaseDir, id+".lease")
}

func (d sqliteDialect) lease(_ context.Context, id, purpose string) (func() error, error) {
	l, err := lock.TryLock(d.leasePath(id), purpose)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

func (d sqliteDialect) live(_ context.Context, _ queryer, id string) bool {
	return lock.Held(d.leasePath(id))
}

func (d sqliteDialect) holders(_ context.Context, _ *sql.DB, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if lock.Held(d.leasePath(id)) {
			out[id] = "a process of this host"
		}
	}
	return out, nil
}

func (sqliteDialect) hosts(context.Context, *sql.DB) ([]string, error) { return nil, nil }

func (sqliteDialect) closeDialect() error { return nil }

// fence: a kernel file lock is held until its holder lets go or dies.
func (sqliteDialect) fence(context.Context, *sql.Tx, string) error { return nil }

// openSQLiteStore opens the SQLite store at path (see openStore) with its
// leases in leaseDir.
func openSQLiteStore(ctx context.Context, path, leaseDir string) (*sqlStore, error) {
	db, err := openStore(ctx, path)
	if err != nil {
		return nil, err
	}
	return &sqlStore{db: db, path: path, dialect: sqliteDialect{leaseDir: leaseDir}}, nil
}

// placementRecord is what Placement.record stores of a placement.
type placementRecord struct {
	Kind HeadPlacement `json:"kind"`
	Root string        `json:"root"`
	Head string        `json:"head"`
}

// decodePlacement reads a stored placement: JSON with a kind the engine
// writes, or corrupt.
func decodePlacement(data string) (placementRecord, error) {
	var pr placementRecord
	if err := json.Unmarshal([]byte(data), &pr); err != nil {
		return pr, fmt.Errorf("its placement: %w", err)
	}
	switch pr.Kind {
	case PerSessionHead, SharedHead, ExclusiveHead, NoHead:
		return pr, nil
	}
	return pr, fmt.Errorf("its placement has no kind the engine writes (%q)", pr.Kind)
}

// decodeSnapshot reads a stored snapshot policy ("" for none).
func decodeSnapshot(data string) (SnapshotPolicy, error) {
	var sp SnapshotPolicy
	if data == "" {
		return sp, nil
	}
	if err := json.Unmarshal([]byte(data), &sp); err != nil {
		return sp, fmt.Errorf("its snapshot policy: %w", err)
	}
	return sp, nil
}

// decodeJSON reads a stored JSON column into v ("" leaves v as it is).
func decodeJSON(what, data string, v any) error {
	if data == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(data), v); err != nil {
		return fmt.Errorf("its %s: %w", what, err)
	}
	return nil
}

// decodeTime reads a stored time.
func decodeTime(what, data string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, data)
	if err != nil {
		return t, fmt.Errorf("its %s time: %w", what, err)
	}
	return t, nil
}

// sessionQuery selects sessions: the one called id, when set; only the
// open ones, when open is.
type sessionQuery struct {
	id   string
	open bool
}
