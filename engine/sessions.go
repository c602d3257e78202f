package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/workspace"
)

// SessionState is whether a session is open or closed.
type SessionState string

// The states of a session.
const (
	SessionOpen   SessionState = "open"   // from NewSession or Resume until Close
	SessionClosed SessionState = "closed" // after Close, until a Resume
)

// HeadPlacement is how a session got its head (see Placement).
type HeadPlacement string

// The ways a session gets its head.
const (
	PerSessionHead HeadPlacement = "per-session" // a head the engine made for the session
	SharedHead     HeadPlacement = "shared"      // a shared head, with other sessions
	ExclusiveHead  HeadPlacement = "exclusive"   // an existing head, claimed
	NoHead         HeadPlacement = "headless"    // no head: roots only
)

// SessionInfo is a session as the engine's database records it: what a
// harness lists, and what it needs to resume the session with the
// configuration it was bound with.
type SessionInfo struct {
	ID    string // the session's ID, a UUID: what Resume takes
	Agent string // the agent's name, as SessionOptions.Agent gave it
	// State is SessionOpen from NewSession (or Resume) until Close, and
	// SessionClosed after. An open session that is not Live was left
	// without a Close: its process died, or it detached (Session.Detach).
	State SessionState
	// Live reports whether a process holds the session's lease now, and
	// Holder which, as the store names it: with PostgreSQL, the host and
	// process (the holding connection's application_name).
	Live   bool
	Holder string
	// Claims reports whether the session holds a claim on its head (an
	// isolated or exclusive head): no other session gets that head
	// without a take-over.
	Claims bool
	// Placement is how the session got its head. Root and Head name the
	// workspace and the head's name (for per-session placement, the head
	// the engine made: "session-" and the ID).
	Placement  HeadPlacement
	Root, Head string
	// LastCheckpoint is the last checkpoint the journal recorded (the
	// head's base before any).
	LastCheckpoint grove.CheckpointID
	// Permission, Snapshot, Config, Policy and Roots are the
	// configuration the session was bound with: give them to ResumeOptions to resume it without
	// drift. They are zero for a session recorded by a grove older than
	// schema version 2.
	Permission Permission
	Snapshot   SnapshotPolicy
	Config     []byte
	Policy     []Policy // from schema version 3
	Roots      []Root   // from schema version 3
	// Created and Updated are when the session was made and when its
	// record last changed (not every journal event changes it).
	Created, Updated time.Time
}

// Sessions lists the sessions in the engine's database, oldest first,
// open and closed. A database that cannot be read is a *StoreError.
func (e *Engine) Sessions(ctx context.Context) ([]SessionInfo, error) {
	if err := grove.ContextError(ctx, "engine: sessions"); err != nil {
		return nil, err
	}
	return e.st.sessions(ctx, sessionQuery{})
}

// OpenSessions is Sessions without the closed ones: what a harness or a
// check of a workspace needs, at the cost of the open sessions only.
func (e *Engine) OpenSessions(ctx context.Context) ([]SessionInfo, error) {
	if err := grove.ContextError(ctx, "engine: sessions"); err != nil {
		return nil, err
	}
	return e.st.sessions(ctx, sessionQuery{open: true})
}

// Claimant returns the open session that claims the head called head of
// the workspace at root (a Root as SessionInfo records it), if one does:
// the session a NewSession answered AlreadyBound for, to name or to take
// over.
func (e *Engine) Claimant(ctx context.Context, root, head string) (SessionInfo, bool, error) {
	open, err := e.OpenSessions(ctx)
	if err != nil {
		return SessionInfo{}, false, err
	}
	for _, si := range open {
		if si.Claims && si.Head == head && si.Root == root {
			return si, true, nil
		}
	}
	return SessionInfo{}, false, nil
}

// Orphans returns the open sessions of ws whose head is none of its live
// or archived heads (destroyed, or its record lost): they can never
// resume. CloseSession closes one, unless a process runs it (Live).
func (e *Engine) Orphans(ctx context.Context, ws *workspace.Workspace) ([]SessionInfo, error) {
	open, err := e.OpenSessions(ctx)
	if err != nil {
		return nil, err
	}
	heads, err := ws.Heads(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, h := range heads {
		live[h.Name] = true
	}
	loc := ws.Info().Locator
	var out []SessionInfo
	for _, si := range open {
		ours := si.Root == loc || si.Root == filepath.Dir(loc)
		if si.Head != "" && ours && !live[si.Head] {
			out = append(out, si)
		}
	}
	return out, nil
}

// SessionInfo returns what the database records of session id. An ID
// that names no session (or is not a session ID) is NotFound; a database
// that cannot be read is a *StoreError.
func (e *Engine) SessionInfo(ctx context.Context, id string) (SessionInfo, error) {
	const op = "session info"
	if err := grove.ContextError(ctx, "engine: "+op); err != nil {
		return SessionInfo{}, err
	}
	if !validSessionID(id) {
		return SessionInfo{}, errorf(grove.NotFound, op, "%q is not a session ID", id)
	}
	infos, err := e.st.sessions(ctx, sessionQuery{id: id})
	if errors.Is(err, errNoSession) {
		return SessionInfo{}, errorf(grove.NotFound, op, "no session %s", id)
	}
	if err != nil {
		return SessionInfo{}, err
	}
	return infos[0], nil
}

// CloseSession closes session id without resuming it: for a session whose
// head is gone for good (destroyed), which Resume cannot reopen and so
// cannot close. It releases the session's claim and journals
// EventClosed; its head, files and journal are not touched. A session
// a live process holds is a *ResumeError of kind SessionBusy; an unknown
// ID is NotFound; closing a closed session changes nothing.
func (e *Engine) CloseSession(ctx context.Context, id string) error {
	const op = "close session"
	done, err := e.begin(op)
	if err != nil {
		return err
	}
	defer done()
	if err := grove.ContextError(ctx, "engine: "+op); err != nil {
		return err
	}
	if !validSessionID(id) {
		return errorf(grove.NotFound, op, "%q is not a session ID", id)
	}
	si, err := e.SessionInfo(ctx, id)
	if err != nil {
		return err
	}
	if si.State == SessionClosed {
		return nil
	}
	release, _, err := e.st.lease(ctx, id, "close session "+id)
	if grove.CodeOf(err) == grove.Busy {
		return &ResumeError{Kind: SessionBusy, SessionID: id, Err: err}
	}
	if err != nil {
		return err
	}
	defer release()
	return e.st.closeSession(ctx, id)
}

// JournalCheckpoints lists, sorted and without repeats, every commit the
// journals of the open sessions name (checkpoints, restore targets and
// the commits restores reached, safety and final checkpoints, fork
// points, each session's last checkpoint): what a retention policy must
// keep so that no open session's record points at a deleted checkpoint
// (pass it as workspace.RetentionPolicy.Keep). A database that cannot be
// read is a *StoreError.
func (e *Engine) JournalCheckpoints(ctx context.Context) ([]grove.CheckpointID, error) {
	if err := grove.ContextError(ctx, "engine: journal checkpoints"); err != nil {
		return nil, err
	}
	lasts, payloads, err := e.st.openJournals(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[grove.CheckpointID]bool{}
	for _, last := range lasts {
		if last != "" {
			seen[grove.CheckpointID(last)] = true
		}
	}
	for _, p := range payloads {
		var obj map[string]any
		if json.Unmarshal([]byte(p), &obj) != nil {
			continue
		}
		for _, field := range []string{"checkpoint", "commit", "to", "safety", "final", "from"} {
			if v, ok := obj[field].(string); ok && isObjectName(v) {
				seen[grove.CheckpointID(v)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// isObjectName reports whether s is a full hexadecimal object name.
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
