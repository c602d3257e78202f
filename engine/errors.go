package engine

import (
	"fmt"

	"github.com/groveworks/grove/backend"
)

// ResumeKind says why a session could not be resumed.
type ResumeKind string

const (
	// SessionNotFound: no session has that ID (or the ID is malformed).
	SessionNotFound ResumeKind = "session-not-found"
	// BindingCorrupt: the stored binding cannot be read.
	BindingCorrupt ResumeKind = "binding-corrupt"
	// BackendUnavailable: no registered backend has the binding's backend ID.
	BackendUnavailable ResumeKind = "backend-unavailable"
	// HeadUnavailable: the head is missing, archived, destroyed,
	// unregistered or moved; ResumeError.Why says which.
	HeadUnavailable ResumeKind = "head-unavailable"
	// IdentityMismatch: what the binding names is not what is there.
	IdentityMismatch ResumeKind = "identity-mismatch"
	// ConfigDrift: the session's configuration changed since it was bound.
	ConfigDrift ResumeKind = "config-drift"
	// SessionBusy: the session is live in another process, or its head is
	// held by another session.
	SessionBusy ResumeKind = "session-busy"
)

// Why a head is unavailable (ResumeError.Why).
const (
	WhyMissing      = "missing"
	WhyArchived     = "archived"
	WhyDestroyed    = "destroyed"
	WhyUnregistered = "unregistered"
	WhyMoved        = "moved"
	WhyBranch       = "branch"
)

// ResumeError is every failure of Engine.Resume. Match it with errors.As;
// Err, the cause, is usually a *backend.Error.
type ResumeError struct {
	Kind      ResumeKind
	SessionID string
	Why       string // for HeadUnavailable: missing, archived, destroyed, unregistered, moved or branch
	Err       error
}

func (e *ResumeError) Error() string {
	kind := string(e.Kind)
	if e.Why != "" {
		kind += " (" + e.Why + ")"
	}
	return fmt.Sprintf("engine: resume session %s: %s: %v", e.SessionID, kind, e.Err)
}

func (e *ResumeError) Unwrap() error { return e.Err }

// PlacementKind says what is wrong with a placement.
type PlacementKind string

const (
	NoPlacement   PlacementKind = "no-placement"   // a workspace is needed and none is placed
	TwoPlacements PlacementKind = "two-placements" // more than one of PerSession, Shared, Exclusive
	NilBackend    PlacementKind = "nil-backend"    // the placement names no backend
	EmptyRoot     PlacementKind = "empty-root"     // the placement names no workspace root
	BadRoot       PlacementKind = "bad-root"       // the root cannot be canonicalized
	NoHeadName    PlacementKind = "no-head-name"   // a shared or exclusive placement names no head
)

// PlacementError is an invalid placement, found when an engine or a
// session is defined.
type PlacementError struct {
	Kind PlacementKind
	Err  error
}

func (e *PlacementError) Error() string {
	return fmt.Sprintf("engine: placement: %s: %v", e.Kind, e.Err)
}

func (e *PlacementError) Unwrap() error { return e.Err }

// PersistenceOverlapError: the engine's files (its database or lease
// files) would lie in or under a head's directory, where a restore or a
// destroy would take them.
type PersistenceOverlapError struct {
	Path string // the engine's file or directory
	Head string // the head's directory it lies in
}

func (e *PersistenceOverlapError) Error() string {
	return fmt.Sprintf("engine: %s lies inside the head directory %s", e.Path, e.Head)
}

// SnapshotPolicyError is a snapshot policy that cannot be honoured.
type SnapshotPolicyError struct {
	Reason string
}

func (e *SnapshotPolicyError) Error() string { return "engine: snapshot policy: " + e.Reason }

// StoreKind says what is wrong with the engine's database.
type StoreKind string

const (
	NotADatabase StoreKind = "not-a-database" // the file is not SQLite
	SchemaTooNew StoreKind = "schema-too-new" // written by a newer grove
	StoreFailed  StoreKind = "store-failed"   // SQLite reported an error
)

// StoreError is a database the engine cannot use. Nothing was written to
// it.
type StoreError struct {
	Kind StoreKind
	Path string
	Err  error
}

func (e *StoreError) Error() string {
	return fmt.Sprintf("engine: store %s: %s: %v", e.Path, e.Kind, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

func errorf(code backend.Code, op, format string, args ...any) error {
	return backend.Errorf(code, "engine: "+op, format, args...)
}
