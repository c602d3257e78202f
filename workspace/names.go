package workspace

import (
	"github.com/groveworks/grove/backend"
)

// The data nouns users and drivers share, defined once in package backend
// and aliased here so that a program using grove imports workspace (and
// engine, and one backend package) but never backend. The options users
// fill are this package's own (options.go).
type (
	Backend          = backend.Backend
	ID               = backend.ID
	WorkspaceID      = backend.WorkspaceID
	HeadID           = backend.HeadID
	CheckpointID     = backend.CheckpointID
	Rev              = backend.Rev
	Access           = backend.Access
	HeadState        = backend.HeadState
	Capabilities     = backend.Capabilities
	WorkspaceInfo    = backend.WorkspaceInfo
	HeadSpec         = backend.HeadSpec
	HeadInfo         = backend.HeadInfo
	Signature        = backend.Signature
	Checkpoint       = backend.Checkpoint
	CheckpointResult = backend.CheckpointResult
	Skipped          = backend.Skipped
	SkipReason       = backend.SkipReason
	Change           = backend.Change
	ChangeKind       = backend.ChangeKind
	Operation        = backend.Operation
	Status           = backend.Status
	Diff             = backend.Diff
	FileStat         = backend.FileStat
	Binding          = backend.Binding
	Digest           = backend.Digest
	FS               = backend.FS
	Error            = backend.Error
	Code             = backend.Code
	Reason           = backend.Reason
)

// The constants of the shared nouns.
const (
	Live     = backend.Live
	Isolated = backend.Isolated
	Shared   = backend.Shared

	OpNone         = backend.OpNone
	OpMerge        = backend.OpMerge
	OpRebase       = backend.OpRebase
	OpCherryPick   = backend.OpCherryPick
	OpRevert       = backend.OpRevert
	OpBisect       = backend.OpBisect
	OpApplyMailbox = backend.OpApplyMailbox

	ChangeAdded     = backend.ChangeAdded
	ChangeModified  = backend.ChangeModified
	ChangeDeleted   = backend.ChangeDeleted
	ChangeUntracked = backend.ChangeUntracked

	SkipTooLarge       = backend.SkipTooLarge
	SkipEmptyDirectory = backend.SkipEmptyDirectory
	SkipIrregular      = backend.SkipIrregular

	ReasonMissing      = backend.ReasonMissing
	ReasonUnregistered = backend.ReasonUnregistered
	ReasonMoved        = backend.ReasonMoved
	ReasonHeadID       = backend.ReasonHeadID
	ReasonWorkspaceID  = backend.ReasonWorkspaceID
	ReasonBranch       = backend.ReasonBranch
	ReasonBackend      = backend.ReasonBackend
	ReasonAccess       = backend.ReasonAccess

	DefaultMaxNewFileSize = backend.DefaultMaxNewFileSize

	StateActive    = backend.StateActive
	StateArchived  = backend.StateArchived
	StateDestroyed = backend.StateDestroyed

	OK                     = backend.OK
	NotFound               = backend.NotFound
	AlreadyExists          = backend.AlreadyExists
	InvalidArgument        = backend.InvalidArgument
	FailedPrecondition     = backend.FailedPrecondition
	Conflict               = backend.Conflict
	AlreadyBound           = backend.AlreadyBound
	Archived               = backend.Archived
	Destroyed              = backend.Destroyed
	Dirty                  = backend.Dirty
	BindingCorrupt         = backend.BindingCorrupt
	BackendUnavailable     = backend.BackendUnavailable
	IdentityMismatch       = backend.IdentityMismatch
	PermissionDenied       = backend.PermissionDenied
	PathEscape             = backend.PathEscape
	Busy                   = backend.Busy
	WorkspaceNotConfigured = backend.WorkspaceNotConfigured
	Unimplemented          = backend.Unimplemented
	Canceled               = backend.Canceled
	Internal               = backend.Internal
)

// DefaultAuthor is the author of checkpoints whose options name none.
var DefaultAuthor = backend.DefaultAuthor

// The sentinels of the codes: the same values as the backend package's,
// so errors.Is works with either.
var (
	ErrNotFound               = backend.ErrNotFound
	ErrAlreadyExists          = backend.ErrAlreadyExists
	ErrInvalidArgument        = backend.ErrInvalidArgument
	ErrFailedPrecondition     = backend.ErrFailedPrecondition
	ErrConflict               = backend.ErrConflict
	ErrAlreadyBound           = backend.ErrAlreadyBound
	ErrArchived               = backend.ErrArchived
	ErrDestroyed              = backend.ErrDestroyed
	ErrDirty                  = backend.ErrDirty
	ErrBindingCorrupt         = backend.ErrBindingCorrupt
	ErrBackendUnavailable     = backend.ErrBackendUnavailable
	ErrIdentityMismatch       = backend.ErrIdentityMismatch
	ErrPermissionDenied       = backend.ErrPermissionDenied
	ErrPathEscape             = backend.ErrPathEscape
	ErrBusy                   = backend.ErrBusy
	ErrWorkspaceNotConfigured = backend.ErrWorkspaceNotConfigured
	ErrUnimplemented          = backend.ErrUnimplemented
	ErrCanceled               = backend.ErrCanceled
	ErrInternal               = backend.ErrInternal
)

// CodeOf returns the code of err: OK for nil, Canceled for a context error,
// Internal for an error that is not grove's.
func CodeOf(err error) Code { return backend.CodeOf(err) }

// DecodeBinding decodes a binding made by Binding.Encode; anything malformed
// is BindingCorrupt.
func DecodeBinding(data []byte) (Binding, error) { return backend.DecodeBinding(data) }

// DigestOf returns the SHA-256 digest of data.
func DigestOf(data []byte) Digest { return backend.DigestOf(data) }
