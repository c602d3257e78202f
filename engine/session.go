package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sync"
	"time"

	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/internal/lock"
	"github.com/groveworks/grove/workspace"
)

// Session is one agent's session, bound to one head (or none). Its methods
// are safe for concurrent use.
type Session struct {
	e       *Engine
	id      string
	kind    string // per-session, shared, exclusive, fork, headless
	ws      *workspace.Workspace
	head    *workspace.Head
	access  Access
	snap    SnapshotPolicy
	lease   *lock.Lock
	resumed bool
	report  ResumeReport
	exts    map[reflect.Type]any

	mu             sync.Mutex
	turn           bool
	turns          int
	closed         bool
	idle           *time.Timer
	lastCheckpoint string
}

// ID returns the session's ID (a UUID), the key Resume takes.
func (s *Session) ID() string { return s.id }

// Head returns the session's head, or nil for a headless session.
func (s *Session) Head() *workspace.Head { return s.head }

// Resumed returns what Resume found; the zero value for a new session.
func (s *Session) Resumed() ResumeReport { return s.report }

// FS returns the head's file system under the session's access: writes
// through a ReadOnly session are PermissionDenied. It is nil for a
// headless session.
func (s *Session) FS() backend.FS {
	if s.head == nil {
		return nil
	}
	if s.access == ReadOnly {
		return readOnlyFS{s.head.FS()}
	}
	return s.head.FS()
}

// bindHead opens or creates the head the placement names.
func (s *Session) bindHead(ctx context.Context, p Placement) error {
	var err error
	switch {
	case p.PerSession != nil:
		ps := p.PerSession
		if s.ws, err = workspace.Open(ctx, ps.Backend, ps.Root, &workspace.OpenOptions{HeadsDir: ps.HeadsDir}); err != nil {
			return err
		}
		b := s.ws.Head("session-" + s.id).Isolated()
		if ps.Base != "" {
			b = b.From(ps.Base)
		}
		s.head, err = b.Create(ctx)
		return err
	default:
		eh, shared := p.Exclusive, false
		if p.Shared != nil {
			eh, shared = p.Shared, true
		}
		if s.ws, err = workspace.Open(ctx, eh.Backend, eh.Root, nil); err != nil {
			return err
		}
		if s.head, err = s.ws.OpenHead(ctx, eh.Head, nil); err != nil {
			return err
		}
		if shared && s.head.Info().Access != backend.Shared {
			return errorf(backend.InvalidArgument, "new session", "head %q is %s; a shared placement needs a shared head", eh.Head, s.head.Info().Access)
		}
		return nil
	}
}

// release undoes a session that failed to start or closes one: the head
// handle, the workspace and the lease. destroy removes a head the session
// itself created.
func (s *Session) release(ctx context.Context, destroy bool) {
	if s.head != nil {
		if destroy {
			_, _ = s.head.Destroy(context.WithoutCancel(ctx), &workspace.DestroyOptions{Discard: true})
		} else {
			_ = s.head.Close()
		}
	}
	if s.ws != nil {
		_ = s.ws.Close()
	}
	if s.lease != nil {
		_ = s.lease.Unlock()
	}
}

func (s *Session) check(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errorf(backend.FailedPrecondition, op, "session %s is closed", s.id)
	}
	return nil
}

func (s *Session) needHead(op string) error {
	if err := s.check(op); err != nil {
		return err
	}
	if s.head == nil {
		return errorf(backend.WorkspaceNotConfigured, op, "session %s has no head", s.id)
	}
	return nil
}

// journal appends one event for the session.
func (s *Session) journal(ctx context.Context, kind EventKind, payload any) error {
	return s.e.tx(ctx, func(tx *sql.Tx) error { return appendEvent(ctx, tx, s.id, kind, payload) })
}

// Checkpoint checkpoints the head and journals it. A headless session
// answers WorkspaceNotConfigured and journals nothing.
func (s *Session) Checkpoint(ctx context.Context, opts *workspace.CheckpointOptions) (workspace.CheckpointResult, error) {
	if err := s.needHead("checkpoint"); err != nil {
		return workspace.CheckpointResult{}, err
	}
	cp, err := s.head.Checkpoint(ctx, opts)
	if err != nil {
		return cp, err
	}
	return cp, s.recordCheckpoint(ctx, cp, EventCheckpointed)
}

// recordCheckpoint journals a checkpoint and makes it the session's last.
func (s *Session) recordCheckpoint(ctx context.Context, cp workspace.CheckpointResult, kind EventKind) error {
	err := s.e.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET last_checkpoint = ?, updated_at = ? WHERE id = ?`, string(cp.ID), now(), s.id); err != nil {
			return err
		}
		return appendEvent(ctx, tx, s.id, kind, map[string]any{"checkpoint": cp.ID, "new": cp.New, "skipped": len(cp.Skipped)})
	})
	if err == nil {
		s.mu.Lock()
		s.lastCheckpoint = string(cp.ID)
		s.mu.Unlock()
	}
	return err
}

// Restore restores the head (with its safety checkpoint) and journals it.
// It is an idle-time operation: while a turn runs it is FailedPrecondition.
func (s *Session) Restore(ctx context.Context, to backend.Rev, opts *workspace.RestoreOptions) (workspace.RestoreResult, error) {
	if err := s.needHead("restore"); err != nil {
		return workspace.RestoreResult{}, err
	}
	s.mu.Lock()
	busy := s.turn
	s.mu.Unlock()
	if busy {
		return workspace.RestoreResult{}, errorf(backend.FailedPrecondition, "restore", "a turn is running")
	}
	res, err := s.head.Restore(ctx, to, opts)
	if err != nil {
		return res, err
	}
	err = s.e.tx(ctx, func(tx *sql.Tx) error {
		payload := map[string]any{"to": to, "commit": res.Commit}
		if res.Safety != nil {
			payload["safety"] = res.Safety.ID
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET last_checkpoint = ?, updated_at = ? WHERE id = ?`, string(res.Commit), now(), s.id); err != nil {
			return err
		}
		return appendEvent(ctx, tx, s.id, EventRestored, payload)
	})
	if err == nil {
		s.mu.Lock()
		s.lastCheckpoint = string(res.Commit)
		s.mu.Unlock()
	}
	return res, err
}

// Fork checkpoints the head (uncommitted work included), creates an
// isolated head name from it and returns a new session bound to it
// (exclusively, through its claim). opts configures the new session; nil
// gives it this session's access and snapshot policy. Its Placement is
// ignored.
func (s *Session) Fork(ctx context.Context, name string, opts *SessionOptions) (*Session, error) {
	if err := s.needHead("fork"); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &SessionOptions{Access: s.access, Snapshot: &s.snap}
	}
	h, err := s.head.Fork(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	_ = h.Close() // the new session opens it under its own claim
	child, err := s.e.NewSession(ctx, SessionOptions{
		Agent: opts.Agent, Access: opts.Access, Snapshot: opts.Snapshot, Config: opts.Config, Extensions: opts.Extensions,
		Placement: Placement{Exclusive: &ExistingHead{Backend: s.ws.Backend(), Root: s.ws.Info().Locator, Head: name}},
	})
	if err != nil {
		return nil, err
	}
	return child, s.journal(ctx, EventForked, map[string]any{"session": child.id, "head": child.head.Info().ID, "from": child.head.Info().Base})
}

// Archive archives the session's head and journals it.
func (s *Session) Archive(ctx context.Context) error {
	if err := s.needHead("archive"); err != nil {
		return err
	}
	if err := s.head.Archive(ctx); err != nil {
		return err
	}
	return s.journal(ctx, EventArchived, nil)
}

// Destroy destroys the session's head (with its final checkpoint unless
// opts.Discard), journals it and closes the session.
func (s *Session) Destroy(ctx context.Context, opts *workspace.DestroyOptions) (workspace.DestroyResult, error) {
	if err := s.needHead("destroy"); err != nil {
		return workspace.DestroyResult{}, err
	}
	res, err := s.head.Destroy(ctx, opts)
	if err != nil {
		return res, err
	}
	payload := map[string]any{}
	if res.Final != nil {
		payload["final"] = res.Final.ID
	}
	if err := s.journal(ctx, EventDestroyed, payload); err != nil {
		return res, err
	}
	s.head = nil
	return res, s.Close()
}

// Turn runs one turn of the agent: it journals the start and the end,
// refuses Restore meanwhile, and applies the snapshot policy: OnTurnDone
// checkpoints after the turn (a Required failure fails the turn; a
// BestEffort one is journaled), OnIdle checkpoints when no turn starts for
// the idle timeout. A second concurrent turn is FailedPrecondition.
func (s *Session) Turn(ctx context.Context, f func(ctx context.Context) error) error {
	if err := s.check("turn"); err != nil {
		return err
	}
	s.mu.Lock()
	if s.turn {
		s.mu.Unlock()
		return errorf(backend.FailedPrecondition, "turn", "a turn is already running")
	}
	s.turn = true
	s.turns++
	n := s.turns
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turn = false
		s.mu.Unlock()
	}()
	if err := s.journal(ctx, EventTurnStarted, map[string]any{"turn": n}); err != nil {
		return err
	}
	ferr := f(ctx)
	done := map[string]any{"turn": n}
	if ferr != nil {
		done["error"] = ferr.Error()
	}
	if err := s.journal(ctx, EventTurnDone, done); err != nil {
		return errors.Join(ferr, err)
	}
	if s.head == nil {
		return ferr
	}
	switch s.snap.Trigger {
	case OnTurnDone:
		if err := s.autoCheckpoint(ctx, fmt.Sprintf("grove: after turn %d", n)); err != nil && s.snap.Mode == Required {
			return errors.Join(ferr, err)
		}
	case OnIdle:
		s.mu.Lock()
		if !s.closed {
			s.idle = time.AfterFunc(s.snap.Idle, s.idleCheckpoint)
		}
		s.mu.Unlock()
	}
	return ferr
}

// autoCheckpoint takes a policy checkpoint, journaling a failure.
func (s *Session) autoCheckpoint(ctx context.Context, message string) error {
	cp, err := s.head.Checkpoint(ctx, &workspace.CheckpointOptions{Message: message})
	if err == nil {
		return s.recordCheckpoint(ctx, cp, EventCheckpointed)
	}
	_ = s.journal(context.WithoutCancel(ctx), EventCheckpointFailed, map[string]any{"error": err.Error(), "mode": s.snap.Mode})
	return err
}

// idleCheckpoint runs when the idle timer fires with no turn running.
func (s *Session) idleCheckpoint() {
	s.mu.Lock()
	if s.closed || s.turn {
		s.mu.Unlock()
		return
	}
	s.idle = nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_ = s.autoCheckpoint(ctx, "grove: idle checkpoint")
}

// Drift lists the paths that differ between the head's files now and the
// session's last checkpoint: what a checkpoint now would record.
func (s *Session) Drift(ctx context.Context) ([]string, error) {
	if err := s.needHead("drift"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	last := s.lastCheckpoint
	s.mu.Unlock()
	if last == "" {
		last = string(s.head.Info().Base)
	}
	d, err := s.head.Diff(ctx, backend.Rev(last), workspace.Live)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(d.Files))
	for i, f := range d.Files {
		out[i] = f.Path
	}
	return out, nil
}

// Events reads the session's journal back, in order.
func (s *Session) Events(ctx context.Context) ([]Event, error) { return s.e.Events(ctx, s.id) }

// As forwards to the head's backend; a headless session answers false.
func (s *Session) As(target any) bool {
	if s.ws == nil {
		return false
	}
	return s.ws.Backend().As(target)
}

// Close ends the session in this process: it journals the close, releases
// the session's claim and lease, and closes its head handle. It never
// deletes a head, a worktree or a branch. A second Close is an error.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errorf(backend.FailedPrecondition, "close", "session %s is already closed", s.id)
	}
	s.closed = true
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	ctx := context.Background()
	err := s.e.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE session_id = ?`, s.id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET state = 'closed', updated_at = ? WHERE id = ?`, now(), s.id); err != nil {
			return err
		}
		return appendEvent(ctx, tx, s.id, EventClosed, nil)
	})
	s.release(ctx, false)
	s.e.untrack(s)
	return err
}

// readOnlyFS refuses every write with PermissionDenied.
type readOnlyFS struct{ backend.FS }

func denied(op, name string) error {
	return &backend.Error{Code: backend.PermissionDenied, Op: "engine: " + op, Path: name, Err: errors.New("the session is read-only")}
}

func (r readOnlyFS) WriteFile(name string, _ []byte, _ fs.FileMode) error {
	return denied("writefile", name)
}
func (r readOnlyFS) WriteFileIf(name string, _ []byte, _ fs.FileMode, _ backend.Digest) error {
	return denied("writefileif", name)
}
func (r readOnlyFS) MkdirAll(name string, _ fs.FileMode) error { return denied("mkdirall", name) }
func (r readOnlyFS) Remove(name string) error                  { return denied("remove", name) }
func (r readOnlyFS) Rename(oldname, _ string) error            { return denied("rename", oldname) }
func (r readOnlyFS) Symlink(_, name string) error              { return denied("symlink", name) }
func (r readOnlyFS) Chmod(name string, _ fs.FileMode) error    { return denied("chmod", name) }

// Env is what an extension's constructor receives: the exact head and FS
// the session's file tools use.
type Env struct {
	SessionID string
	Head      *workspace.Head // nil for a headless session
	FS        backend.FS      // the session's FS, access enforced
}

// Extension adds a value to a session's environment, keyed by its dynamic
// type (a process runner, a tool set). New runs once the head is bound.
type Extension struct {
	New func(env Env) (any, error)
}

func (s *Session) buildExtensions(exts []Extension) error {
	s.exts = map[reflect.Type]any{}
	env := Env{SessionID: s.id, Head: s.head, FS: s.FS()}
	for _, x := range exts {
		if x.New == nil {
			return errorf(backend.InvalidArgument, "extension", "an extension without a constructor")
		}
		v, err := x.New(env)
		if err != nil {
			return fmt.Errorf("engine: extension: %w", err)
		}
		t := reflect.TypeOf(v)
		if _, dup := s.exts[t]; dup {
			return errorf(backend.InvalidArgument, "extension", "two extensions of type %v", t)
		}
		s.exts[t] = v
	}
	return nil
}

// ExtensionOf returns the session's extension of type T.
func ExtensionOf[T any](s *Session) (T, bool) {
	v, ok := s.exts[reflect.TypeFor[T]()].(T)
	return v, ok
}

// EventKind names a journal event.
type EventKind string

const (
	EventBound            EventKind = "bound"
	EventResumed          EventKind = "resumed"
	EventCheckpointed     EventKind = "checkpointed"
	EventCheckpointFailed EventKind = "checkpoint-failed"
	EventRestored         EventKind = "restored"
	EventForked           EventKind = "forked"
	EventArchived         EventKind = "archived"
	EventDestroyed        EventKind = "destroyed"
	EventTurnStarted      EventKind = "turn-started"
	EventTurnDone         EventKind = "turn-done"
	EventClosed           EventKind = "closed"
	EventTakenOver        EventKind = "taken-over"
)

// Event is one journal entry.
type Event struct {
	Seq     int64
	At      time.Time
	Kind    EventKind
	Payload json.RawMessage
}

func appendEvent(ctx context.Context, tx *sql.Tx, id string, kind EventKind, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if string(data) == "null" {
		data = []byte("{}")
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO events (session_id, seq, at, kind, payload)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?), ?, ?, ?)`,
		id, id, now(), string(kind), string(data))
	return err
}

// Events reads session id's journal, in order.
func (e *Engine) Events(ctx context.Context, id string) ([]Event, error) {
	rows, err := e.db.QueryContext(ctx, `SELECT seq, at, kind, payload FROM events WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, e.storeErr(err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		var at, kind, payload string
		if err := rows.Scan(&ev.Seq, &at, &kind, &payload); err != nil {
			return nil, e.storeErr(err)
		}
		ev.At, _ = time.Parse(time.RFC3339Nano, at)
		ev.Kind, ev.Payload = EventKind(kind), json.RawMessage(payload)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, e.storeErr(err)
	}
	return out, nil
}
