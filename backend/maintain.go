package backend

import (
	"context"
	"time"

	"github.com/groveworks/grove"
)

// Maintainer is implemented by a driver Workspace whose state can drift
// from what it recorded (heads deleted or moved by hand, interrupted
// operations, registrations left behind) and whose checkpoints can be
// thinned out. The workspace layer answers Reconcile and Retain with
// Unimplemented for a workspace that does not implement it.
type Maintainer interface {
	// Reconcile finds what does not match the workspace's records and,
	// with opts.Fix, repairs what can be repaired without losing a file
	// that no checkpoint holds. Every finding is reported, fixed or not;
	// a fix that fails is reported on its finding, not as the call's error.
	Reconcile(ctx context.Context, opts *ReconcileOptions) (grove.ReconcileReport, error)
	// Retain deletes the private checkpoint refs opts does not keep (see
	// RetentionPolicy) and reports, per head, what it kept and deleted;
	// with DryRun it deletes nothing and reports the same.
	Retain(ctx context.Context, opts *RetentionPolicy) (grove.RetentionReport, error)
}

// ReconcileOptions configure Reconcile.
type ReconcileOptions struct {
	// Fix repairs what is safe to repair (each FindingKind says how).
	Fix bool
	// StaleLockAge is how old a git lock file must be to be called stale;
	// 0 means DefaultStaleLockAge.
	StaleLockAge time.Duration
}

// RetentionPolicy says which checkpoints Retain keeps. A checkpoint is
// kept when any rule keeps it: among its head's KeepLast newest (0: no
// such rule), newer than KeepWithin by its commit time (0: no such
// rule), listed in Keep, a revision its head was ever restored to, the
// commit a branch or tag points to, or its head's newest checkpoint
// (which is always kept). Safety and final checkpoints are checkpoints
// like any other. At least one of KeepLast and KeepWithin must be set
// (InvalidArgument otherwise); negative values are InvalidArgument.
// Deleting a checkpoint deletes its private ref only: a commit a branch
// or another ref reaches stays, and git's own garbage collection decides
// when unreachable commits go.
type RetentionPolicy struct {
	KeepLast   int
	KeepWithin time.Duration
	Keep       []grove.CheckpointID
	DryRun     bool
}
