package workspace

import (
	"github.com/groveworks/grove/backend"
)

// The data nouns users and drivers share are defined once in package
// backend and aliased here, so that a program using grove imports
// workspace (with engine and one backend package) but never backend.
type (
	// Backend a storage implementation (gitbackend, memorybackend); pass one to Open or Reopen.
	Backend = backend.Backend
	// ID names a backend, persistently ("git", "memory").
	ID = backend.ID
	// WorkspaceID names a workspace stably, across moves.
	WorkspaceID = backend.WorkspaceID
	// HeadID names a head stably; never reused.
	HeadID = backend.HeadID
	// CheckpointID is a checkpoint's full commit hash.
	CheckpointID = backend.CheckpointID
	// Rev is a revision: a branch, a tag, a commit hash or a CheckpointID.
	Rev = backend.Rev
	// Access is how sessions may hold a head: Isolated or Shared.
	Access = backend.Access
	// HeadState is a head's life-cycle state: StateActive, StateArchived or StateDestroyed.
	HeadState = backend.HeadState
	// Capabilities says, as data, what a backend can do.
	Capabilities = backend.Capabilities
	// WorkspaceInfo identifies a workspace.
	WorkspaceInfo = backend.WorkspaceInfo
	// HeadSpec is what HeadBuilder.Create asks the backend to make.
	HeadSpec = backend.HeadSpec
	// HeadInfo describes a head: ID, name, access, branch, directory, base, state.
	HeadInfo = backend.HeadInfo
	// Signature names the author of a checkpoint.
	Signature = backend.Signature
	// Checkpoint is one commit of a head's state, as Head.Log lists it.
	Checkpoint = backend.Checkpoint
	// CheckpointResult is what a checkpoint returns: the checkpoint, whether it is new, what it skipped.
	CheckpointResult = backend.CheckpointResult
	// Skipped is a path a checkpoint did not capture, and why.
	Skipped = backend.Skipped
	// SkipReason says why a path was not captured.
	SkipReason = backend.SkipReason
	// Change is one changed path in a Status.
	Change = backend.Change
	// ChangeKind says how a path changed.
	ChangeKind = backend.ChangeKind
	// Operation is a merge-like git operation in progress in a head.
	Operation = backend.Operation
	// Status is a head's state now: dirty, changes, conflicts, commits.
	Status = backend.Status
	// Diff is the difference between two trees: a patch and per-file counts.
	Diff = backend.Diff
	// FileStat is one file's line counts in a Diff.
	FileStat = backend.FileStat
	// Binding reopens exactly one head; persist its Encode before a session runs.
	Binding = backend.Binding
	// Digest is the SHA-256 of a file's content, for compare-and-set writes.
	Digest = backend.Digest
	// Hook is a command run in a head's directory: OpenOptions.Setup and Teardown.
	Hook = backend.Hook
	// Remote is the Git remote a workspace's checkpoints travel to: OpenOptions.Remote.
	Remote = backend.Remote
	// Sandbox is where commands on a head's content run: OpenOptions.Sandbox.
	Sandbox = backend.Sandbox
	// SandboxKind names a sandbox: SandboxNone or SandboxBwrap.
	SandboxKind = backend.SandboxKind
	// Mount is a host path a sandbox shows: Command.Mounts.
	Mount = backend.Mount
	// Tamper is one thing a head's watch saw change: Head.Tampered.
	Tamper = backend.Tamper
	// RelocateResult is what Workspace.Relocate did.
	RelocateResult = backend.RelocateResult
	// HookError is a failed Hook, with its output.
	HookError = backend.HookError
	// ReconcileReport is what Workspace.Reconcile found.
	ReconcileReport = backend.ReconcileReport
	// Finding is one thing Workspace.Reconcile found, and whether it was fixed.
	Finding = backend.Finding
	// FindingKind names what a Finding is about; each kind's constant says how it is fixed.
	FindingKind = backend.FindingKind
	// RetentionReport is what Workspace.Retain kept and deleted, per head.
	RetentionReport = backend.RetentionReport
	// HeadRetention is what Workspace.Retain kept and deleted of one head.
	HeadRetention = backend.HeadRetention
	// LandStrategy is how Head.Land writes a head's work: LandSquash, LandRebase, LandMerge.
	LandStrategy = backend.LandStrategy
	// LandResult is what Head.Land did.
	LandResult = backend.LandResult
	// LandConflict lists the paths a Head.Land could not merge.
	LandConflict = backend.LandConflict
	// FS is a head's working tree: slash paths inside the head, never its .git.
	FS = backend.FS
	// Error is grove's one error type: a Code, the operation, head, path, revision and reason.
	Error = backend.Error
	// Code is what kind of failure an Error is, from a closed list.
	Code = backend.Code
	// Reason says which check failed when a head could not be reopened.
	Reason = backend.Reason
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
	Unavailable            = backend.Unavailable
)

// DefaultAuthor is the author of checkpoints whose options name none.
var DefaultAuthor = backend.DefaultAuthor

// The kinds of Finding; see their definitions in package backend.
const (
	FindingMissingHead        = backend.FindingMissingHead
	FindingUnregistered       = backend.FindingUnregistered
	FindingMovedRepository    = backend.FindingMovedRepository
	FindingStaleRegistration  = backend.FindingStaleRegistration
	FindingStrayDirectory     = backend.FindingStrayDirectory
	FindingInterruptedCreate  = backend.FindingInterruptedCreate
	FindingInterruptedDestroy = backend.FindingInterruptedDestroy
	FindingStaleLock          = backend.FindingStaleLock
	FindingUncaptured         = backend.FindingUncaptured
	FindingTampered           = backend.FindingTampered
)

// The strategies of Head.Land.
const (
	LandSquash = backend.LandSquash
	LandRebase = backend.LandRebase
	LandMerge  = backend.LandMerge
)

// The hooks a HookError names.
const (
	HookSetup    = backend.HookSetup
	HookTeardown = backend.HookTeardown
)

// The sandbox kinds.
const (
	SandboxNone  = backend.SandboxNone
	SandboxBwrap = backend.SandboxBwrap
)

// DefaultHookTimeout bounds a Hook whose Timeout is zero.
const DefaultHookTimeout = backend.DefaultHookTimeout

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
	ErrUnavailable            = backend.ErrUnavailable
)

// CodeOf returns the code of err: OK for nil, Canceled for a context error,
// Internal for an error that is not grove's.
func CodeOf(err error) Code { return backend.CodeOf(err) }

// DecodeBinding decodes a binding made by Binding.Encode; anything malformed
// is BindingCorrupt.
func DecodeBinding(data []byte) (Binding, error) { return backend.DecodeBinding(data) }

// DigestOf returns the SHA-256 digest of data.
func DigestOf(data []byte) Digest { return backend.DigestOf(data) }
