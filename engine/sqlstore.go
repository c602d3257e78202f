package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groveworks/grove"
)

// sqlStore is the store on a SQL database: the embedded SQLite file
// shared by the processes on one host (see openSQLite), or a PostgreSQL
// database shared by a fleet of hosts (see openPostgres). The SQL is the
// same on both, written with ? placeholders; what differs is in dialect.
type sqlStore struct {
	db   *sql.DB
	path string // the database file, or the URL without its password
	dialect

	mu   sync.Mutex
	gens map[string]int64 // the generation this process holds of each session whose lease it holds

	// step, when set (by tests), is called at each step of a fenced
	// write: "begin", "fenced" (its fence passed) and "commit" (its
	// writes are done, its commit not yet sent).
	step func(string)
}

// dialect is what differs between the databases a sqlStore runs on.
type dialect interface {
	// q rewrites a query's ? placeholders for the database.
	q(query string) string
	// serialize makes the transactions that call it with one key run one
	// after another; SQLite's immediate transactions already do.
	serialize(ctx context.Context, tx *sql.Tx, key string) error
	// lease takes session id's lease without waiting: Busy when anyone
	// holds it (this process included). A live session holds its lease.
	lease(ctx context.Context, id, purpose string) (release func() error, err error)
	// live reports whether someone holds session id's lease; q runs a
	// query in the caller's transaction when it needs one.
	live(ctx context.Context, q queryer, id string) bool
	// holders names the holder of each of ids' leases that someone holds
	// (this process's own included), in one look; a failed look is an
	// error, not a guess.
	holders(ctx context.Context, db *sql.DB, ids []string) (map[string]string, error)
	// hosts names the engines connected to the store now, this one
	// included (nil where the store cannot tell: SQLite's).
	hosts(ctx context.Context, db *sql.DB) ([]string, error)
	// fence fails, in tx, unless this process still holds session id's
	// lease: a session whose lease was lost (its holder's database
	// connection ended while it lived on) writes nothing more.
	fence(ctx context.Context, tx *sql.Tx, id string) error
	// closeDialect releases what the dialect holds.
	closeDialect() error
}

// queryer is what a *sql.DB and a *sql.Tx both offer.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

var _ store = (*sqlStore)(nil)

func (s *sqlStore) close() error { return errors.Join(s.closeDialect(), s.db.Close()) }

func (s *sqlStore) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	_, err := tx.ExecContext(ctx, s.q(query), args...)
	return err
}

// tx runs f in an immediate transaction, committing if it returns nil.
// An error of f that is a *grove.Error (AlreadyBound, a corrupt claim)
// is returned as it is; anything else is the store's failure.
func (s *sqlStore) tx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.failCtx(ctx, err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		var be *grove.Error
		var se *StoreError
		if errors.As(err, &be) || errors.As(err, &se) {
			return err
		}
		return s.failCtx(ctx, err)
	}
	if s.step != nil {
		s.step("commit")
	}
	if err := tx.Commit(); err != nil {
		return s.failCtx(ctx, err)
	}
	return nil
}

// lease takes session id's lease (see dialect.lease) and then the next
// generation of the session: the fencing token every write of this
// holder names (see fence). Taking it waits for a write of the previous
// holder in flight, and every later one is refused. A session not yet
// made starts at generation 1 (create records it).
func (s *sqlStore) lease(ctx context.Context, id, purpose string) (func() error, int64, error) {
	release, err := s.dialect.lease(ctx, id, purpose)
	if err != nil {
		return nil, 0, err
	}
	gen := int64(1)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET generation = generation + 1 WHERE id = ?`), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return tx.QueryRowContext(ctx, s.q(`SELECT generation FROM sessions WHERE id = ?`), id).Scan(&gen)
	})
	if err != nil {
		_ = release()
		return nil, 0, err
	}
	s.mu.Lock()
	if s.gens == nil {
		s.gens = map[string]int64{}
	}
	s.gens[id] = gen
	s.mu.Unlock()
	return func() error {
		s.mu.Lock()
		if s.gens[id] == gen {
			delete(s.gens, id)
		}
		s.mu.Unlock()
		return release()
	}, gen, nil
}

func (s *sqlStore) hosts(ctx context.Context) ([]string, error) {
	out, err := s.dialect.hosts(ctx, s.db)
	if err != nil {
		return nil, s.failCtx(ctx, err)
	}
	return out, nil
}

// held is the generation this process holds of session id, 0 for none.
func (s *sqlStore) held(id string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens[id]
}

// fence fails, in tx, unless this process holds session id's lease (see
// dialect.fence) and the generation it took with it is still the
// session's. The check is a write of the session's row, which the next
// holder's generation waits for: a write that passed it is committed
// before the session passes on, or not at all.
func (s *sqlStore) fence(ctx context.Context, tx *sql.Tx, id string) error {
	if s.step != nil {
		s.step("begin")
	}
	if err := s.dialect.fence(ctx, tx, id); err != nil {
		return err
	}
	gen := s.held(id)
	res, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET generation = generation WHERE id = ? AND generation = ?`), id, gen)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		var cur int64
		_ = tx.QueryRowContext(ctx, s.q(`SELECT generation FROM sessions WHERE id = ?`), id).Scan(&cur)
		return &grove.Error{Code: grove.FailedPrecondition, Op: "engine: store", Path: s.path,
			Err: fmt.Errorf("session %s was taken by another holder (this one holds generation %d, the session is at %d): this one writes nothing more for it", id, gen, cur)}
	}
	if s.step != nil {
		s.step("fenced")
	}
	return nil
}

func (s *sqlStore) fail(err error) error { return storeFailure(s.path, err, StoreFailed) }

// failCtx is fail, except that a transaction database/sql rolled back
// because ctx ended (it then answers sql.ErrTxDone, not the context's
// error) is Canceled.
func (s *sqlStore) failCtx(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", cerr, err)
	}
	return s.fail(err)
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func (s *sqlStore) create(ctx context.Context, rec sessionRecord, bind grove.Binding, claim, takeOver bool) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		t := now()
		snap, err := json.Marshal(rec.snap)
		if err != nil {
			return err
		}
		pol, roots := "", ""
		if len(rec.policy) > 0 {
			data, err := json.Marshal(rec.policy)
			if err != nil {
				return err
			}
			pol = string(data)
		}
		if len(rec.roots) > 0 {
			data, err := json.Marshal(rec.roots)
			if err != nil {
				return err
			}
			roots = string(data)
		}
		if err := s.exec(ctx, tx, `INSERT INTO sessions (id, agent, placement, config_digest, state, last_checkpoint, created_at, updated_at, permission, snapshot, config, policy, roots, generation)
			VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?)`, rec.id, rec.agent, rec.placement, rec.digest, string(rec.lastCheckpoint), t, t,
			string(rec.perm), string(snap), rec.config, pol, roots, s.held(rec.id)); err != nil {
			return err
		}
		var payload BoundEvent
		if bind.Backend != "" {
			data, err := bind.Encode()
			if err != nil {
				return err
			}
			if err := s.exec(ctx, tx, `INSERT INTO bindings (session_id, backend, binding) VALUES (?, ?, ?)`,
				rec.id, string(bind.Backend), data); err != nil {
				return err
			}
			payload = BoundEvent{Backend: bind.Backend, Workspace: bind.Workspace, Head: bind.Head, Access: bind.Access}
		}
		if claim {
			if err := s.claimTx(ctx, tx, rec.id, bind, takeOver); err != nil {
				return err
			}
		}
		if rec.parent != "" {
			if err := s.appendEvent(ctx, tx, rec.parent, EventForked,
				ForkedEvent{Session: rec.id, Head: bind.Head, From: rec.lastCheckpoint}); err != nil {
				return err
			}
		}
		return s.appendEvent(ctx, tx, rec.id, EventBound, payload)
	})
}

func (s *sqlStore) load(ctx context.Context, id string) (sessionRecord, []byte, error) {
	rec := sessionRecord{id: id}
	var last, perm, snap, pol, roots string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT agent, placement, config_digest, last_checkpoint, state, permission, snapshot, config, policy, roots FROM sessions WHERE id = ?`), id).
		Scan(&rec.agent, &rec.placement, &rec.digest, &last, &rec.state, &perm, &snap, &rec.config, &pol, &roots)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, nil, errNoSession
	}
	if err != nil {
		return rec, nil, s.fail(err)
	}
	rec.lastCheckpoint = grove.CheckpointID(last)
	rec.perm = Permission(perm)
	pr, err := decodePlacement(rec.placement)
	if err == nil {
		rec.kind = pr.Kind
		if rec.snap, err = decodeSnapshot(snap); err == nil {
			if err = decodeJSON("policy", pol, &rec.policy); err == nil {
				err = decodeJSON("roots", roots, &rec.roots)
			}
		}
	}
	if err != nil {
		return rec, nil, &StoreError{Kind: StoreCorrupt, Path: s.path, Err: fmt.Errorf("session %s: %w", id, err)}
	}
	var data []byte
	err = s.db.QueryRowContext(ctx, s.q(`SELECT binding FROM bindings WHERE session_id = ?`), id).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return rec, nil, nil
	case err != nil:
		return rec, nil, s.fail(err)
	}
	if data == nil {
		data = []byte{} // a stored binding, however empty, is not "headless"
	}
	return rec, data, nil
}

func (s *sqlStore) claim(ctx context.Context, id string, bind grove.Binding) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return s.claimTx(ctx, tx, id, bind, false) })
}

// claimTx records in tx that session id holds the head bind names. A
// claim held by another session is AlreadyBound, unless takeOver and that
// session is not live, when the claim passes to id and the loser's journal
// says so.
func (s *sqlStore) claimTx(ctx context.Context, tx *sql.Tx, id string, bind grove.Binding, takeOver bool) error {
	if err := s.serialize(ctx, tx, "claim "+string(bind.Backend)+" "+string(bind.Workspace)+" "+string(bind.Head)); err != nil {
		return err
	}
	var holder string
	err := tx.QueryRowContext(ctx, s.q(`SELECT session_id FROM claims WHERE backend = ? AND workspace = ? AND head = ?`),
		string(bind.Backend), string(bind.Workspace), string(bind.Head)).Scan(&holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case holder == id:
		return nil
	case !validSessionID(holder):
		return &StoreError{Kind: StoreCorrupt, Path: s.path, Err: fmt.Errorf("the claim on head %s names %q, which is not a session ID", bind.Head, holder)}
	case takeOver && !s.live(ctx, tx, holder):
		if err := s.exec(ctx, tx, `DELETE FROM claims WHERE session_id = ? AND head = ?`, holder, string(bind.Head)); err != nil {
			return err
		}
		// The loser's next holder, should it come back, is fenced.
		if err := s.exec(ctx, tx, `UPDATE sessions SET generation = generation + 1 WHERE id = ?`, holder); err != nil {
			return err
		}
		if err := s.appendEvent(ctx, tx, holder, EventTakenOver, TakenOverEvent{By: id}); err != nil {
			return err
		}
	default:
		return &grove.Error{Code: grove.AlreadyBound, Op: "engine: claim", Head: string(bind.Head),
			Err: fmt.Errorf("the head is claimed by session %s", holder)}
	}
	err = s.exec(ctx, tx, `INSERT INTO claims (backend, workspace, head, session_id, claimed_at) VALUES (?, ?, ?, ?, ?)`,
		string(bind.Backend), string(bind.Workspace), string(bind.Head), id, now())
	return err
}

func (s *sqlStore) reopen(ctx context.Context, id string, kind EventKind, payload any) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fence(ctx, tx, id); err != nil {
			return err
		}
		if err := s.exec(ctx, tx, `UPDATE sessions SET state = 'open', updated_at = ? WHERE id = ?`, now(), id); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, kind, payload)
	})
}

func (s *sqlStore) setLast(ctx context.Context, id string, commit grove.CheckpointID, kind EventKind, payload any) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fence(ctx, tx, id); err != nil {
			return err
		}
		if err := s.exec(ctx, tx, `UPDATE sessions SET last_checkpoint = ?, updated_at = ? WHERE id = ?`, string(commit), now(), id); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, kind, payload)
	})
}

func (s *sqlStore) rebind(ctx context.Context, id string, bind grove.Binding, commit grove.CheckpointID, kind EventKind, payload any) error {
	data, err := bind.Encode()
	if err != nil {
		return s.fail(err)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fence(ctx, tx, id); err != nil {
			return err
		}
		if err := s.exec(ctx, tx, `UPDATE bindings SET backend = ?, binding = ? WHERE session_id = ?`, string(bind.Backend), data, id); err != nil {
			return err
		}
		if err := s.exec(ctx, tx, `UPDATE sessions SET last_checkpoint = ?, updated_at = ? WHERE id = ?`, string(commit), now(), id); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, kind, payload)
	})
}

func (s *sqlStore) journal(ctx context.Context, id string, kind EventKind, payload any) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fence(ctx, tx, id); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, kind, payload)
	})
}

func (s *sqlStore) closeSession(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.fence(ctx, tx, id); err != nil {
			return err
		}
		if err := s.exec(ctx, tx, `DELETE FROM claims WHERE session_id = ?`, id); err != nil {
			return err
		}
		if err := s.exec(ctx, tx, `UPDATE sessions SET state = 'closed', updated_at = ? WHERE id = ?`, now(), id); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, EventClosed, NoPayload{})
	})
}

func (s *sqlStore) events(ctx context.Context, id string) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT seq, at, kind, payload, generation FROM events WHERE session_id = ? ORDER BY seq`), id)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		var at, kind, payload string
		if err := rows.Scan(&ev.Seq, &at, &kind, &payload, &ev.Generation); err != nil {
			return nil, s.fail(err)
		}
		if ev.At, err = decodeTime("event", at); err != nil {
			return nil, &StoreError{Kind: StoreCorrupt, Path: s.path, Err: fmt.Errorf("session %s, event %d: %w", id, ev.Seq, err)}
		}
		ev.Kind, ev.Payload = EventKind(kind), json.RawMessage(payload)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}

// openJournals reads, in one query, the last checkpoint of every open
// session and the payloads of its journal's events.
func (s *sqlStore) openJournals(ctx context.Context) (lasts []string, payloads []string, err error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT sessions.last_checkpoint, COALESCE(events.payload, '')
		FROM sessions LEFT JOIN events ON events.session_id = sessions.id WHERE sessions.state = 'open'`))
	if err != nil {
		return nil, nil, s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var last, payload string
		if err := rows.Scan(&last, &payload); err != nil {
			return nil, nil, s.fail(err)
		}
		lasts, payloads = append(lasts, last), append(payloads, payload)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.fail(err)
	}
	return lasts, payloads, nil
}

// appendEvent appends one event to session id's journal in tx.
func (s *sqlStore) appendEvent(ctx context.Context, tx *sql.Tx, id string, kind EventKind, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if string(data) == "null" {
		data = []byte("{}")
	}
	if err := s.serialize(ctx, tx, "events "+id); err != nil {
		return err
	}
	return s.exec(ctx, tx, `INSERT INTO events (session_id, seq, at, kind, payload, generation)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?), ?, ?, ?,
			(SELECT generation FROM sessions WHERE id = ?))`,
		id, id, now(), string(kind), string(data), id)
}

func (s *sqlStore) sessions(ctx context.Context, sq sessionQuery) ([]SessionInfo, error) {
	query := `SELECT id, agent, placement, state, last_checkpoint, created_at, updated_at, permission, snapshot, config, policy, roots,
		EXISTS (SELECT 1 FROM claims WHERE claims.session_id = sessions.id) FROM sessions`
	var where []string
	var args []any
	if sq.id != "" {
		where = append(where, `id = ?`)
		args = append(args, sq.id)
	}
	if sq.open {
		where = append(where, `state = 'open'`)
	}
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	rows, err := s.db.QueryContext(ctx, s.q(query+` ORDER BY created_at, id`), args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []SessionInfo
	for rows.Next() {
		var si SessionInfo
		var placement, last, created, updated, perm, snap, pol, roots string
		if err := rows.Scan(&si.ID, &si.Agent, &placement, &si.State, &last, &created, &updated, &perm, &snap, &si.Config, &pol, &roots, &si.Claims); err != nil {
			return nil, s.fail(err)
		}
		pr, err := decodePlacement(placement)
		if err == nil {
			si.Placement, si.Root, si.Head = pr.Kind, pr.Root, pr.Head
			if pr.Kind == PerSessionHead {
				si.Head = "session-" + si.ID
			}
			si.LastCheckpoint = grove.CheckpointID(last)
			si.Permission = Permission(perm)
			if si.Created, err = decodeTime("creation", created); err == nil {
				if si.Updated, err = decodeTime("update", updated); err == nil {
					if si.Snapshot, err = decodeSnapshot(snap); err == nil {
						if err = decodeJSON("policy", pol, &si.Policy); err == nil {
							err = decodeJSON("roots", roots, &si.Roots)
						}
					}
				}
			}
		}
		if err != nil {
			return nil, &StoreError{Kind: StoreCorrupt, Path: s.path, Err: fmt.Errorf("session %s: %w", si.ID, err)}
		}
		out = append(out, si)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	// Liveness is asked once the rows are read: a look through the pool
	// while they hold a connection could wait for a connection forever.
	_ = rows.Close()
	var open []string
	for _, si := range out {
		if si.State == SessionOpen && validSessionID(si.ID) {
			open = append(open, si.ID)
		}
	}
	held, err := s.holders(ctx, s.db, open)
	if err != nil {
		return nil, s.fail(err)
	}
	for i := range out {
		out[i].Holder, out[i].Live = held[out[i].ID]
	}
	if sq.id != "" && len(out) == 0 {
		return nil, errNoSession
	}
	return out, nil
}
