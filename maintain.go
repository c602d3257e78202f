package grove

import (
	"time"
)

// FindingKind names what Reconcile found.
type FindingKind string

const (
	// FindingMissingHead: a live head whose directory is gone. Fixed by
	// rebuilding it (as Recreate does).
	FindingMissingHead FindingKind = "missing-head"
	// FindingUnregistered: a head's directory that git no longer
	// registers as a worktree (its registration was pruned or deleted).
	// Fixed by registering it again, leaving its files as they are.
	FindingUnregistered FindingKind = "unregistered"
	// FindingMovedRepository: a head whose registration names the
	// repository where it was before it moved. Fixed by git worktree
	// repair.
	FindingMovedRepository FindingKind = "moved-repository"
	// FindingStaleRegistration: git registers a worktree whose directory
	// is gone and that is no live head's. Fixed by removing the
	// registration (as git worktree prune does; a locked one is kept).
	FindingStaleRegistration FindingKind = "stale-registration"
	// FindingStrayDirectory: a directory among the heads that is no
	// head's. Never deleted: it may hold someone's files.
	FindingStrayDirectory FindingKind = "stray-directory"
	// FindingInterruptedCreate: a create that never finished. Fixed by
	// removing what it made.
	FindingInterruptedCreate FindingKind = "interrupted-create"
	// FindingInterruptedDestroy: a destroy that never finished, or a
	// destroyed head's files still in the trash. Fixed by finishing it.
	FindingInterruptedDestroy FindingKind = "interrupted-destroy"
	// FindingStaleLock: a lock file no live process holds (one left by an
	// interrupted grove operation, or a git lock file older than
	// ReconcileOptions.StaleLockAge while no grove operation runs on the
	// head). Fixed by removing it.
	FindingStaleLock FindingKind = "stale-lock"
	// FindingUncaptured: a head with files no checkpoint holds. Never
	// "fixed": it is the user's work; checkpoint or discard it.
	FindingUncaptured FindingKind = "uncaptured-files"
	// FindingTampered: while a head was watched (Watcher), something of
	// the repository that makes the user's own git run commands or read
	// other files (configuration, hooks, info/), or a ref outside grove's
	// heads, changed. Fixed by putting back what the watch recorded.
	FindingTampered FindingKind = "tampered"
)

// Finding is one thing Reconcile found.
type Finding struct {
	Kind   FindingKind `json:"kind"`
	Head   string      `json:"head,omitempty"`    // the head's name, when it concerns one
	HeadID HeadID      `json:"head_id,omitempty"` // and its ID
	Path   string      `json:"path,omitempty"`    // the file or directory concerned
	Detail string      `json:"detail"`            // what is wrong, in words
	// Fixed is set when Fix repaired it; FixError says why a fix failed.
	Fixed    bool   `json:"fixed"`
	FixError string `json:"fix_error,omitempty"`
}

// DefaultStaleLockAge is ReconcileOptions.StaleLockAge's default.
const DefaultStaleLockAge = 10 * time.Minute

// ReconcileReport is what Reconcile found.
type ReconcileReport struct {
	Findings []Finding `json:"findings"`
}

// HeadRetention is what Retain did to one head's checkpoints.
type HeadRetention struct {
	Head    string         `json:"head"`
	HeadID  HeadID         `json:"head_id"`
	Kept    []CheckpointID `json:"kept"`    // newest first
	Deleted []CheckpointID `json:"deleted"` // newest first
}

// RetentionReport is what Retain did, per head, sorted by head name.
type RetentionReport struct {
	Heads []HeadRetention `json:"heads"`
	// Remote is what it did to the checkpoint refs the workspace's
	// remote holds, every clone's heads' (none without a remote).
	Remote []HeadRetention `json:"remote,omitempty"`
	DryRun bool            `json:"dry_run"`
}
