package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/groveworks/grove"
)

// coded returns the *grove.Error an engine error type unwraps to, which
// is how every error of this package answers grove.CodeOf and errors.Is
// with its Code while errors.As still reaches the engine type: cause when
// it is already a *grove.Error of code, otherwise a new one of code
// wrapping cause and carrying its Head, Path, Rev, Reason and Current. The
// cause stays in the chain, so a context error still matches.
func coded(code grove.Code, op, path string, cause error) error {
	var inner *grove.Error
	found := errors.As(cause, &inner)
	if found && grove.CodeOf(cause) == code {
		return cause
	}
	e := &grove.Error{Code: code, Op: "engine: " + op, Path: path, Err: cause}
	if found {
		e.Head, e.Rev, e.Reason, e.Current = inner.Head, inner.Rev, inner.Reason, inner.Current
		if e.Path == "" {
			e.Path = inner.Path
		}
	}
	return e
}

// ResumeKind says why a session could not be resumed. Kinds that name a
// failure of the head or its binding (BindingCorrupt, BackendUnavailable,
// HeadUnavailable, IdentityMismatch) say which step of Resume failed; what
// exactly went wrong is the cause's code and reason, never restated.
type ResumeKind string

const (
	// SessionNotFound: no session has that ID (or the ID is malformed).
	SessionNotFound ResumeKind = "session-not-found"
	// BindingCorrupt: the stored binding cannot be read.
	BindingCorrupt ResumeKind = "binding-corrupt"
	// BackendUnavailable: no registered backend has the binding's backend ID.
	BackendUnavailable ResumeKind = "backend-unavailable"
	// HeadUnavailable: the head cannot be reopened: its code says whether
	// it is archived (Archived), destroyed (Destroyed) or gone
	// (NotFound), and ResumeError.Why which check found it gone.
	HeadUnavailable ResumeKind = "head-unavailable"
	// IdentityMismatch: what the binding names is not what is there.
	IdentityMismatch ResumeKind = "identity-mismatch"
	// ConfigDrift: the session's configuration changed since it was bound.
	ConfigDrift ResumeKind = "config-drift"
	// SessionBusy: the session is live in another process, or its head is
	// held by another session.
	SessionBusy ResumeKind = "session-busy"
)

// ResumeError is a session that cannot be resumed as it was bound. Match
// it with errors.As; Err, the cause, is usually a *grove.Error.
//
// Its code (Code, grove.CodeOf, errors.Is) follows Kind:
//
//	SessionNotFound     NotFound
//	BindingCorrupt      BindingCorrupt
//	BackendUnavailable  BackendUnavailable
//	HeadUnavailable     the cause's: Archived, Destroyed, NotFound (with
//	                    Why: missing, unregistered, moved or branch), or
//	                    the code of another failure to reopen (NotFound
//	                    when there is no cause)
//	IdentityMismatch    IdentityMismatch
//	ConfigDrift         FailedPrecondition
//	SessionBusy         AlreadyBound when another session holds the head
//	                    (the cause is AlreadyBound), otherwise Busy (the
//	                    session is live in another process)
type ResumeError struct {
	Kind      ResumeKind // which step of Resume failed
	SessionID string     // the session Resume was asked for
	// Why is, for HeadUnavailable, the cause's reason (the backend's own
	// value: grove.ReasonMissing, ReasonUnregistered, ReasonMoved or
	// ReasonBranch); empty when the code says it all.
	Why grove.Reason
	Err error // the cause, usually a *grove.Error
}

func (e *ResumeError) Error() string {
	kind := string(e.Kind)
	if e.Why != "" {
		kind += " (" + string(e.Why) + ")"
	}
	return fmt.Sprintf("engine: resume session %s: %s: %v", e.SessionID, kind, e.Err)
}

// Code returns the error's code, as the table on ResumeError says.
func (e *ResumeError) Code() grove.Code {
	switch e.Kind {
	case SessionNotFound:
		return grove.NotFound
	case BindingCorrupt:
		return grove.BindingCorrupt
	case BackendUnavailable:
		return grove.BackendUnavailable
	case IdentityMismatch:
		return grove.IdentityMismatch
	case ConfigDrift:
		return grove.FailedPrecondition
	case SessionBusy:
		if grove.CodeOf(e.Err) == grove.AlreadyBound {
			return grove.AlreadyBound
		}
		return grove.Busy
	case HeadUnavailable:
		if c := grove.CodeOf(e.Err); c != grove.OK {
			return c
		}
		return grove.NotFound
	}
	return grove.Internal
}

// Unwrap returns the *grove.Error of Code wrapping Err.
func (e *ResumeError) Unwrap() error { return coded(e.Code(), "resume", "", e.Err) }

// PlacementKind says what is wrong with a placement.
type PlacementKind string

const (
	NoPlacement   PlacementKind = "no-placement"   // a workspace is needed and none is placed
	TwoPlacements PlacementKind = "two-placements" // more than one of PerSession, Shared, Exclusive
	NilBackend    PlacementKind = "nil-backend"    // the placement names no backend
	EmptyRoot     PlacementKind = "empty-root"     // the placement names no workspace root
	BadRoot       PlacementKind = "bad-root"       // the root cannot be canonicalized
	NoHeadName    PlacementKind = "no-head-name"   // a shared or exclusive placement names no head
	// WorkspaceToolWithoutPlacement: a tool that works on a head was
	// asked for on a session that has none (engine/tools).
	WorkspaceToolWithoutPlacement PlacementKind = "workspace-tool-without-placement"
)

// PlacementError is an invalid placement, found when an engine or a
// session is defined. Its code is InvalidArgument.
type PlacementError struct {
	Kind PlacementKind // what is wrong with the placement
	Err  error         // the cause, in words
}

func (e *PlacementError) Error() string {
	return fmt.Sprintf("engine: placement: %s: %v", e.Kind, e.Err)
}

// Code returns InvalidArgument.
func (e *PlacementError) Code() grove.Code { return grove.InvalidArgument }

// Unwrap returns the InvalidArgument *grove.Error wrapping Err.
func (e *PlacementError) Unwrap() error { return coded(e.Code(), "placement", "", e.Err) }

// PersistenceOverlapError: the engine's files (its database or lease
// files) would lie in or under a head's directory, where a restore or a
// destroy would take them. Its code is InvalidArgument: the caller's
// Options.Path, Options.LeaseDir or placement put them there, and only
// other arguments can fix it.
type PersistenceOverlapError struct {
	Path string // the engine's file or directory
	Head string // the head's directory it lies in
}

func (e *PersistenceOverlapError) Error() string {
	return fmt.Sprintf("engine: %s lies inside the head directory %s", e.Path, e.Head)
}

// Code returns InvalidArgument.
func (e *PersistenceOverlapError) Code() grove.Code { return grove.InvalidArgument }

// Unwrap returns the InvalidArgument *grove.Error naming Path.
func (e *PersistenceOverlapError) Unwrap() error {
	return coded(e.Code(), "persistence", e.Path, fmt.Errorf("lies inside the head directory %s", e.Head))
}

// ClaimedError is why a new session got AlreadyBound for an existing
// head: another session claims it. Holder is that session, to name, to
// resume, or (when no process runs it) to take over with
// SessionOptions.TakeOver.
type ClaimedError struct {
	Holder SessionInfo
}

func (e *ClaimedError) Error() string {
	if e.Holder.Live {
		return fmt.Sprintf("the head is claimed by session %s, which a process is running", e.Holder.ID)
	}
	return fmt.Sprintf("the head is claimed by session %s, which no process runs", e.Holder.ID)
}

// SnapshotPolicyError is a snapshot policy that cannot be honoured. Its
// code is InvalidArgument.
type SnapshotPolicyError struct {
	Reason string
}

func (e *SnapshotPolicyError) Error() string { return "engine: snapshot policy: " + e.Reason }

// Code returns InvalidArgument.
func (e *SnapshotPolicyError) Code() grove.Code { return grove.InvalidArgument }

// Unwrap returns the InvalidArgument *grove.Error giving Reason.
func (e *SnapshotPolicyError) Unwrap() error {
	return coded(e.Code(), "snapshot policy", "", errors.New(e.Reason))
}

// StoreKind says what is wrong with the engine's database.
type StoreKind string

const (
	NotADatabase StoreKind = "not-a-database" // the file is not SQLite
	SchemaTooNew StoreKind = "schema-too-new" // written by a newer grove
	StoreCorrupt StoreKind = "corrupt"        // SQLite found malformed pages, or the store holds what grove never writes
	StoreFailed  StoreKind = "store-failed"   // the database reported another error
	NoSQLite     StoreKind = "no-sqlite"      // grove was built without cgo, which SQLite needs
	// StoreInaccessible: the database's file or directory cannot be
	// created, opened or written (permissions, a file in the way, a
	// read-only file system), or the PostgreSQL server cannot be
	// reached, refuses the login or has no such database.
	StoreInaccessible StoreKind = "inaccessible"
	// StoreSharedConnections: the PostgreSQL URL leads through a pooler
	// that hands one server connection to several clients (PgBouncer's
	// transaction or statement pooling). A lease is a session-level
	// advisory lock, which needs a server connection of the engine's
	// own: point the URL at the server, or at a pool in session mode.
	StoreSharedConnections StoreKind = "shared-connections"
)

// StoreError is a database the engine cannot use, from Open or from any
// later call that reads or writes it (NewSession, Resume, Events, a
// session's journal). Nothing was written to it: Open refuses before
// SQLite touches the file, and a failed transaction is rolled back. A
// context that ends during a database call is not a StoreError but a
// Canceled *grove.Error.
//
// Its code follows Kind: FailedPrecondition for NotADatabase, SchemaTooNew,
// StoreCorrupt (the file is in a state the engine cannot use; grove does
// not repair it) and StoreInaccessible (the caller's file system says no),
// Unimplemented for NoSQLite (this binary was built
// with CGO_ENABLED=0; rebuild with cgo and a C compiler), and for
// StoreFailed Busy when SQLite's lock is held past the busy timeout or
// PostgreSQL broke a deadlock or reported a serialization failure,
// Canceled when the cause is a context error, and Internal otherwise.
type StoreError struct {
	Kind StoreKind // what is wrong with the database
	Path string    // the database file, or the PostgreSQL URL without its password
	Err  error     // the cause, as the database or the file system reported it
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("engine: store %s: %s: %v", e.Path, e.Kind, e.Err)
}

// Code returns the error's code, as the table on StoreError says.
func (e *StoreError) Code() grove.Code {
	switch e.Kind {
	case NotADatabase, SchemaTooNew, StoreCorrupt, StoreInaccessible, StoreSharedConnections:
		return grove.FailedPrecondition
	case NoSQLite:
		return grove.Unimplemented
	}
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return grove.Canceled
	}
	if sqliteBusy(e.Err) || pgBusy(e.Err) {
		return grove.Busy
	}
	return grove.Internal
}

// Unwrap returns the *grove.Error of Code wrapping Err.
func (e *StoreError) Unwrap() error { return coded(e.Code(), "store", e.Path, e.Err) }

// storeKind classifies an error SQLite returned: StoreCorrupt for
// malformed pages, NotADatabase for a file SQLite does not recognise, and
// otherwise kind.
func storeKind(err error, kind StoreKind) StoreKind {
	if k := sqliteKind(err); k != "" {
		return k
	}
	if k := pgKind(err); k != "" {
		return k
	}
	return kind
}

func errorf(code grove.Code, op, format string, args ...any) error {
	return grove.Errorf(code, "engine: "+op, format, args...)
}
