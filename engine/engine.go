package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/workspace"
)

// Options configure an Engine.
type Options struct {
	// Path is the SQLite database file, created if absent.
	Path string
	// Backends are the backends sessions may be bound through, by ID; two
	// with one ID are an error.
	Backends []backend.Backend
	// Placement is where sessions that name none get their head; zero
	// means every session must name one (or be Headless).
	Placement Placement
	// Snapshot is the snapshot policy of sessions that name none.
	Snapshot SnapshotPolicy
	// LeaseDir holds the sessions' lease files; empty means Path+".leases".
	LeaseDir string
}

// Engine binds sessions to heads durably and resumes them after a
// restart. It is safe for concurrent use.
type Engine struct {
	db        *sql.DB
	path      string
	leaseDir  string
	backends  []backend.Backend
	byID      map[backend.ID]backend.Backend
	placement Placement
	snapshot  SnapshotPolicy

	mu       sync.Mutex
	closed   bool
	sessions map[*Session]struct{}
}

// Open opens the engine's database (creating it and applying the schema's
// migrations as needed) and checks its options: a duplicate backend ID or
// a nil entry in Backends is InvalidArgument, an invalid placement a
// *PlacementError, an impossible snapshot policy a *SnapshotPolicyError,
// a database that is not SQLite, is malformed or has a newer schema a
// *StoreError. Each of these answers backend.CodeOf (see their types).
func Open(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Path == "" {
		return nil, errorf(backend.InvalidArgument, "open", "no database path")
	}
	path, err := filepath.Abs(opts.Path)
	if err != nil {
		return nil, errorf(backend.InvalidArgument, "open", "database path: %w", err)
	}
	e := &Engine{path: path, leaseDir: opts.LeaseDir, byID: map[backend.ID]backend.Backend{}, sessions: map[*Session]struct{}{}}
	if e.leaseDir == "" {
		e.leaseDir = path + ".leases"
	}
	if e.leaseDir, err = filepath.Abs(e.leaseDir); err != nil {
		return nil, errorf(backend.InvalidArgument, "open", "lease directory: %w", err)
	}
	for i, b := range opts.Backends {
		if b == nil {
			return nil, errorf(backend.InvalidArgument, "open", "Options.Backends[%d] is nil", i)
		}
		if _, dup := e.byID[b.ID()]; dup {
			return nil, errorf(backend.InvalidArgument, "open", "two backends with ID %q", b.ID())
		}
		e.byID[b.ID()] = b
		e.backends = append(e.backends, b)
	}
	if !opts.Placement.IsZero() {
		if e.placement, err = opts.Placement.validate(); err != nil {
			return nil, err
		}
		if err := e.register(e.placement.backend()); err != nil {
			return nil, err
		}
		if ps := e.placement.PerSession; ps != nil && ps.HeadsDir != "" {
			if err := e.checkOverlap(ps.HeadsDir); err != nil {
				return nil, err
			}
		}
	}
	if e.snapshot, err = opts.Snapshot.resolve(e.placement); err != nil {
		return nil, err
	}
	if e.db, err = openStore(ctx, path); err != nil {
		return nil, err
	}
	return e, nil
}

// register adds a placement's backend to the registry unless one with its
// ID is there; another backend value with that ID is InvalidArgument.
func (e *Engine) register(b backend.Backend) error {
	if have, ok := e.byID[b.ID()]; ok {
		if have != b {
			return errorf(backend.InvalidArgument, "open", "the placement's backend is not the registered backend %q", b.ID())
		}
		return nil
	}
	e.byID[b.ID()] = b
	e.backends = append(e.backends, b)
	return nil
}

// checkOverlap refuses a head directory that holds the engine's files.
func (e *Engine) checkOverlap(headDir string) error {
	dir, err := canonicalPath(headDir)
	if err != nil {
		return nil // nothing there to overlap yet
	}
	for _, p := range []string{e.path, e.leaseDir} {
		cp, err := canonicalPath(p)
		if err != nil {
			continue
		}
		if cp == dir || strings.HasPrefix(cp, dir+string(filepath.Separator)) {
			return &PersistenceOverlapError{Path: p, Head: headDir}
		}
	}
	return nil
}

// canonicalPath resolves symlinks in the longest existing prefix of p.
func canonicalPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest), nil
		}
		if filepath.Dir(cur) == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// As sets target through the registered backends, in order, and reports
// whether one could.
func (e *Engine) As(target any) bool {
	for _, b := range e.backends {
		if b.As(target) {
			return true
		}
	}
	return false
}

// Close closes the sessions still open in this engine (releasing their
// leases and claims; nothing is deleted) and the database.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errorf(backend.FailedPrecondition, "close", "engine is already closed")
	}
	e.closed = true
	live := make([]*Session, 0, len(e.sessions))
	for s := range e.sessions {
		live = append(live, s)
	}
	e.mu.Unlock()
	var errs []error
	for _, s := range live {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.db.Close())
	return errors.Join(errs...)
}

func (e *Engine) check(op string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errorf(backend.FailedPrecondition, op, "engine is closed")
	}
	return nil
}

// leasePath is the lease file of session id. Only an ID the engine makes
// (a canonical UUID) ever becomes part of a path: callers check IDs read
// from the database with validSessionID first.
func (e *Engine) leasePath(id string) string { return filepath.Join(e.leaseDir, id+".lease") }

// validSessionID reports whether id is a session ID the engine makes.
func validSessionID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// SessionOptions configure NewSession.
type SessionOptions struct {
	// Agent names the agent, for people reading the journal.
	Agent string
	// Placement is where the session's head comes from; zero means the
	// engine's placement.
	Placement Placement
	// Headless makes a session without a head (no placement may be set);
	// its Checkpoint and Restore answer WorkspaceNotConfigured.
	Headless bool
	// Access is ReadWrite (the default) or ReadOnly, enforced by FS.
	Access Access
	// Snapshot is the session's snapshot policy; nil means the engine's.
	Snapshot *SnapshotPolicy
	// Config is the caller's own configuration (model, tools,
	// instructions), opaque to grove; its digest is checked on resume.
	Config []byte
	// Extensions are built for the session's environment, once its head
	// is bound.
	Extensions []Extension
	// TakeOver takes an exclusive head's claim from a session that is no
	// longer live (its lease is free) instead of failing with AlreadyBound.
	TakeOver bool
}

// NewSession binds a new session to a head and persists the session, its
// binding and, for an isolated or exclusive head, its claim in one
// transaction before returning: nothing runs before the binding is
// durable. A head already claimed by another session is AlreadyBound.
func (e *Engine) NewSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	const op = "new session"
	if err := e.check(op); err != nil {
		return nil, err
	}
	p := opts.Placement
	switch {
	case opts.Headless && !p.IsZero():
		return nil, &PlacementError{Kind: TwoPlacements, Err: errors.New("a headless session with a placement")}
	case p.IsZero() && !opts.Headless:
		p = e.placement
	}
	var err error
	if !opts.Headless {
		if p, err = p.validate(); err != nil {
			return nil, err
		}
	}
	snap := e.snapshot
	if opts.Snapshot != nil {
		snap = *opts.Snapshot
	}
	if snap, err = snap.resolve(p); err != nil {
		return nil, err
	}
	access := opts.Access
	if access == "" {
		access = ReadWrite
	}
	if access != ReadWrite && access != ReadOnly {
		return nil, errorf(backend.InvalidArgument, op, "unknown access %q", access)
	}
	id := uuid.NewString()
	lease, err := lock.TryLock(e.leasePath(id), "session "+id)
	if err != nil {
		return nil, err
	}
	s := &Session{e: e, id: id, access: access, snap: snap, lease: lease, kind: kindOf(p)}
	fail := func(err error) (*Session, error) {
		s.release(ctx, s.kind == "per-session")
		return nil, err
	}
	var b backend.Backend
	var bind backend.Binding
	if !opts.Headless {
		b = p.backend()
		if err := e.register(b); err != nil {
			return fail(err)
		}
		if err := s.bindHead(ctx, p); err != nil {
			return fail(err)
		}
		if err := e.checkOverlap(s.head.Info().Root); err != nil {
			return fail(err)
		}
		bind = s.head.Binding()
	}
	row := sessionRow{
		id: id, agent: opts.Agent, placement: p.record(),
		digest: digest(p.record(), access, snap, backendID(b), opts.Config),
	}
	if err := e.bind(ctx, row, bind, s.kind != "shared" && !opts.Headless, opts.TakeOver); err != nil {
		return fail(err)
	}
	if s.head != nil {
		s.lastCheckpoint = string(s.head.Info().Base)
	}
	if err := s.buildExtensions(opts.Extensions); err != nil {
		_ = s.Close()
		return nil, err
	}
	e.track(s)
	return s, nil
}

func backendID(b backend.Backend) backend.ID {
	if b == nil {
		return ""
	}
	return b.ID()
}

func kindOf(p Placement) string {
	switch {
	case p.PerSession != nil:
		return "per-session"
	case p.Shared != nil:
		return "shared"
	case p.Exclusive != nil:
		return "exclusive"
	}
	return "headless"
}

func (e *Engine) track(s *Session) {
	e.mu.Lock()
	e.sessions[s] = struct{}{}
	e.mu.Unlock()
}

func (e *Engine) untrack(s *Session) {
	e.mu.Lock()
	delete(e.sessions, s)
	e.mu.Unlock()
}

type sessionRow struct {
	id, agent, placement, digest string
}

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

// bind persists a new session, its binding, its claim and its "bound"
// event in one transaction.
func (e *Engine) bind(ctx context.Context, row sessionRow, bind backend.Binding, claim, takeOver bool) error {
	return e.tx(ctx, func(tx *sql.Tx) error {
		t := now()
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, agent, placement, config_digest, state, last_checkpoint, created_at, updated_at)
			VALUES (?, ?, ?, ?, 'open', '', ?, ?)`, row.id, row.agent, row.placement, row.digest, t, t); err != nil {
			return err
		}
		payload := map[string]any{}
		if bind.Backend != "" {
			data, err := bind.Encode()
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO bindings (session_id, backend, binding) VALUES (?, ?, ?)`,
				row.id, string(bind.Backend), data); err != nil {
				return err
			}
			payload = map[string]any{"backend": bind.Backend, "workspace": bind.Workspace, "head": bind.Head, "access": bind.Access}
		}
		if claim {
			if err := e.claim(ctx, tx, row.id, bind, takeOver); err != nil {
				return err
			}
		}
		return appendEvent(ctx, tx, row.id, EventBound, payload)
	})
}

// claim records that session id holds the head bind names. A claim held
// by another session is AlreadyBound, unless takeOver and that session is
// not live (its lease is free), when the claim passes to id and the loser's
// journal says so.
func (e *Engine) claim(ctx context.Context, tx *sql.Tx, id string, bind backend.Binding, takeOver bool) error {
	var holder string
	err := tx.QueryRowContext(ctx, `SELECT session_id FROM claims WHERE backend = ? AND workspace = ? AND head = ?`,
		string(bind.Backend), string(bind.Workspace), string(bind.Head)).Scan(&holder)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case holder == id:
		return nil
	case !validSessionID(holder):
		return &StoreError{Kind: StoreCorrupt, Path: e.path, Err: fmt.Errorf("the claim on head %s names %q, which is not a session ID", bind.Head, holder)}
	case takeOver && !lock.Held(e.leasePath(holder)):
		if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE session_id = ? AND head = ?`, holder, string(bind.Head)); err != nil {
			return err
		}
		if err := appendEvent(ctx, tx, holder, EventTakenOver, map[string]any{"by": id}); err != nil {
			return err
		}
	default:
		return &backend.Error{Code: backend.AlreadyBound, Op: "engine: claim", Head: string(bind.Head),
			Err: fmt.Errorf("the head is claimed by session %s", holder)}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO claims (backend, workspace, head, session_id, claimed_at) VALUES (?, ?, ?, ?, ?)`,
		string(bind.Backend), string(bind.Workspace), string(bind.Head), id, now())
	return err
}

// tx runs f in an immediate transaction, committing if it returns nil.
func (e *Engine) tx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return e.storeErr(err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		var be *backend.Error
		if errors.As(err, &be) {
			return err
		}
		return e.storeErr(err)
	}
	if err := tx.Commit(); err != nil {
		return e.storeErr(err)
	}
	return nil
}

// storeErr is the error of a failed call on the engine's database.
func (e *Engine) storeErr(err error) error { return storeFailure(e.path, err, StoreFailed) }

// storeFailure is the error of a failed call on the database at path: a
// Canceled *backend.Error when a context ended, otherwise a *StoreError
// whose kind SQLite's error decides (kind when it does not).
func storeFailure(path string, err error, kind StoreKind) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &backend.Error{Code: backend.Canceled, Op: "engine: store", Path: path, Err: err}
	}
	return &StoreError{Kind: storeKind(err, kind), Path: path, Err: err}
}

// ResumeOptions configure Resume. The configuration given is compared
// with the one the session was bound with.
type ResumeOptions struct {
	Access           Access
	Snapshot         *SnapshotPolicy
	Config           []byte
	Extensions       []Extension
	AllowConfigDrift bool // resume even if the configuration digest changed
}

// ResumeReport is what Resume found, as data.
type ResumeReport struct {
	// LastCheckpoint is the last checkpoint the journal recorded (the
	// head's base before any).
	LastCheckpoint backend.CheckpointID
	// Gained lists the commits the head's branch gained since then,
	// newest first: work done behind the session's back.
	Gained []backend.CheckpointID
	// ConfigDrift is set when the configuration changed and the caller
	// allowed it.
	ConfigDrift bool
}

// Resume reopens session id exactly: it loads the stored binding, finds
// its backend, reopens the head through workspace.Reopen, compares the
// reopened binding with the stored one and the configuration digest with
// the caller's, and reports the commits the head gained since the last
// journaled checkpoint. It never walks the head's files.
//
// A session that cannot be resumed as it was bound is a *ResumeError whose
// Kind says why (its code is in ResumeError's doc). A database the engine
// cannot read, malformed pages included, is a *StoreError, never a
// ResumeError: the session may be intact, and Resume writes nothing to
// the file. A closed engine is FailedPrecondition and an ended context
// Canceled.
func (e *Engine) Resume(ctx context.Context, id string, opts *ResumeOptions) (*Session, error) {
	if err := e.check("resume"); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &ResumeOptions{}
	}
	fail := func(kind ResumeKind, why string, err error) (*Session, error) {
		return nil, &ResumeError{Kind: kind, SessionID: id, Why: why, Err: err}
	}
	if !validSessionID(id) {
		return fail(SessionNotFound, "", errorf(backend.NotFound, "resume", "%q is not a session ID", id))
	}
	var placement, digestWas, last, state string
	err := e.db.QueryRowContext(ctx, `SELECT placement, config_digest, last_checkpoint, state FROM sessions WHERE id = ?`, id).
		Scan(&placement, &digestWas, &last, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return fail(SessionNotFound, "", errorf(backend.NotFound, "resume", "no session %s", id))
	}
	if err != nil {
		return nil, e.storeErr(err)
	}
	lease, err := lock.TryLock(e.leasePath(id), "session "+id)
	if backend.CodeOf(err) == backend.Busy {
		return fail(SessionBusy, "", err)
	}
	if err != nil {
		return nil, err
	}
	s := &Session{e: e, id: id, lease: lease, resumed: true}
	release := func() { s.release(ctx, false) }
	var backendName string
	var data []byte
	err = e.db.QueryRowContext(ctx, `SELECT backend, binding FROM bindings WHERE session_id = ?`, id).Scan(&backendName, &data)
	headless := errors.Is(err, sql.ErrNoRows)
	if err != nil && !headless {
		release()
		return nil, e.storeErr(err)
	}
	var rec struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal([]byte(placement), &rec)
	kind := rec.Kind
	s.kind = kind
	var b backend.Backend
	if !headless {
		bind, err := workspace.DecodeBinding(data)
		if err != nil {
			release()
			return fail(BindingCorrupt, "", err)
		}
		var ok bool
		if b, ok = e.byID[bind.Backend]; !ok {
			release()
			return fail(BackendUnavailable, "", errorf(backend.BackendUnavailable, "resume", "no backend %q is registered", bind.Backend))
		}
		h, err := workspace.Reopen(ctx, b, bind, nil)
		if err != nil {
			release()
			if backend.CodeOf(err) == backend.Canceled {
				return nil, err
			}
			k, why := resumeKind(err)
			return fail(k, why, err)
		}
		s.head, s.ws = h, h.Workspace()
		if got := h.Binding(); !got.Equal(bind) {
			release()
			return fail(IdentityMismatch, "", errorf(backend.IdentityMismatch, "resume", "the reopened head's binding differs from the stored one"))
		}
		if kind != "shared" {
			if err := e.tx(ctx, func(tx *sql.Tx) error { return e.claim(ctx, tx, id, bind, false) }); err != nil {
				release()
				if backend.CodeOf(err) != backend.AlreadyBound {
					return nil, err // the store failed or ctx ended
				}
				return fail(SessionBusy, "", err)
			}
		}
	}
	snap := SnapshotPolicy{}
	if opts.Snapshot != nil {
		snap = *opts.Snapshot
	} else {
		snap = e.snapshot
	}
	var sp Placement
	if kind == "shared" {
		sp.Shared = &ExistingHead{}
	}
	if snap, err = snap.resolve(sp); err != nil {
		release()
		return nil, err
	}
	access := opts.Access
	if access == "" {
		access = ReadWrite
	}
	s.access, s.snap = access, snap
	report := ResumeReport{LastCheckpoint: backend.CheckpointID(last)}
	if digest(placement, access, snap, backendID(b), opts.Config) != digestWas {
		if !opts.AllowConfigDrift {
			release()
			return fail(ConfigDrift, "", errorf(backend.FailedPrecondition, "resume", "the session's configuration changed since it was bound"))
		}
		report.ConfigDrift = true
	}
	if s.head != nil {
		if last == "" {
			report.LastCheckpoint = s.head.Info().Base
		}
		gained, err := s.head.Commits(ctx, backend.Rev(report.LastCheckpoint))
		if err != nil {
			release()
			if backend.CodeOf(err) == backend.Canceled {
				return nil, err
			}
			k, why := resumeKind(err)
			return fail(k, why, err)
		}
		report.Gained = gained
	}
	s.lastCheckpoint = string(report.LastCheckpoint)
	s.report = report
	err = e.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET state = 'open', updated_at = ? WHERE id = ?`, now(), id); err != nil {
			return err
		}
		return appendEvent(ctx, tx, id, EventResumed, map[string]any{"gained": report.Gained, "config_drift": report.ConfigDrift})
	})
	if err != nil {
		release()
		return nil, err
	}
	if err := s.buildExtensions(opts.Extensions); err != nil {
		_ = s.Close()
		return nil, err
	}
	e.track(s)
	return s, nil
}

// resumeKind classifies a reopen failure.
func resumeKind(err error) (ResumeKind, string) {
	var be *backend.Error
	errors.As(err, &be)
	switch backend.CodeOf(err) {
	case backend.BindingCorrupt:
		return BindingCorrupt, ""
	case backend.IdentityMismatch:
		return IdentityMismatch, ""
	case backend.Archived:
		return HeadUnavailable, WhyArchived
	case backend.Destroyed:
		return HeadUnavailable, WhyDestroyed
	case backend.AlreadyBound, backend.Busy:
		return SessionBusy, ""
	case backend.BackendUnavailable:
		return BackendUnavailable, ""
	case backend.NotFound:
		if be != nil {
			switch be.Reason {
			case backend.ReasonMoved:
				return HeadUnavailable, WhyMoved
			case backend.ReasonUnregistered:
				return HeadUnavailable, WhyUnregistered
			case backend.ReasonBranch:
				return HeadUnavailable, WhyBranch
			}
		}
		return HeadUnavailable, WhyMissing
	}
	return HeadUnavailable, ""
}
