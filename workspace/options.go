package workspace

import (
	"slices"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
)

// The options users fill. Each is converted to what the driver acts on in
// this file, and only here: a driver receives options already normalized
// (never nil, defaults filled, validated) and holding only what a driver
// does. Options the workspace layer consumes itself (Discard, the safety
// and final checkpoints, ForkOptions) never reach a driver.

// OpenOptions configure Open. The zero value (or nil) takes the backend's
// defaults.
type OpenOptions struct {
	// HeadsDir is the directory under which new heads' directories are
	// made when HeadBuilder.Dir is not used. Empty means the backend's
	// default; a backend whose heads are not host directories answers a
	// non-empty HeadsDir with Unimplemented.
	HeadsDir string
	// Setup runs in every head the workspace makes (a create, a fork, a
	// Recreate) once its files, and the copies .worktreeinclude names, are
	// in place, before the head is returned. A setup that fails or times
	// out undoes that create completely (no branch, directory,
	// registration or record is left) and the error, FailedPrecondition,
	// wraps a *HookError with the command's output.
	Setup *grove.Hook
	// Teardown runs in a head's directory before Head.Destroy removes it
	// (after its final checkpoint): one that fails refuses the destroy,
	// FailedPrecondition wrapping a *HookError, with nothing removed
	// (DestroyOptions.SkipTeardown skips it).
	//
	// Setup and Teardown are the caller's configuration: grove never reads
	// them from a file a head holds (the grove command reads them from the
	// .grove.toml in the main checkout's working tree). They run with
	// the caller's rights, and Teardown runs in a directory an agent has
	// written: a command that runs what the head holds (a Makefile target,
	// a package.json script) runs the agent's code. A backend whose heads
	// are not host directories answers either with Unimplemented.
	Teardown *grove.Hook
	// Remote, when set, is the Git remote the workspace's checkpoints
	// travel to, and through which clones of the project on other hosts
	// share its workspace ID (see Remote and Workspace.Relocate). A
	// remote that cannot be reached when the workspace is first opened
	// with it is Unavailable; later, a push that fails is retried in the
	// background and never fails a checkpoint. A backend without
	// Capabilities.Remote answers it with Unimplemented.
	Remote *grove.Remote
	// Sandbox is where every command on a head's content runs: the
	// Setup and Teardown hooks and Head.Run's commands (an agent's). Nil
	// runs them on the host with the caller's rights, and the environment
	// policy only (see Sandbox). A sandbox needs a backend whose heads are
	// host directories (Unimplemented otherwise); a Sandbox it cannot
	// honour (an unknown kind, a relative path, a GROVE_ or GIT_ variable
	// to pass) is InvalidArgument.
	Sandbox *grove.Sandbox
	// Services, when set, gives each head a block of ports of its own on
	// the host, names of its own and variables carrying them, which
	// Setup, Teardown and Head.Run's commands get (see Services and
	// Head.Services). Whether set or not, Destroy and Archive stop the
	// processes grove started in a head first (see Head.StopProcesses).
	Services *Services
	// WatchChanges lets each head opened through the workspace learn from
	// the system's file notifications (Linux's inotify), while it is
	// open, which of its paths change: a whole Checkpoint then looks at
	// those paths alone, and costs no git at all when none changed, and
	// Status answers again without git while nothing changed. Results are
	// always a full scan's: whatever the watcher cannot vouch for (a lost
	// event, the first call, a change of the index, HEAD or the ignore
	// rules, a sealed, sparse or attached head) is scanned whole. It is
	// for long-lived processes (a session, a server); a backend that
	// cannot watch ignores it. Each open head holds an inotify instance
	// with a watch on every directory of its tree, ignored ones included
	// (fs.inotify.max_user_instances and max_user_watches bound them: a
	// head that cannot be watched scans).
	WatchChanges bool
}

// ReopenOptions configure Reopen and Workspace.OpenHead. The zero value (or
// nil) refuses an archived head with Archived.
type ReopenOptions struct {
	// AllowArchived unarchives an archived head instead of failing with
	// Archived.
	AllowArchived bool
	// ReadOnly opens the head as a read-only view (see Head.ReadOnly)
	// without taking its isolation lock, so that a head another holder
	// (a live session) keeps can be watched: its Status, Log, Diff and
	// files read while the holder works. An archived head opens without
	// being unarchived. ReadOnly with AllowArchived is InvalidArgument.
	ReadOnly bool
	// Recreate repairs a head whose directory was deleted (or never
	// finished being rebuilt) instead of failing with NotFound, reason
	// missing: the head is rebuilt at its recorded directory on its branch,
	// with the files of the branch's commit (its last checkpoint, or the
	// checkpoint it was last restored to) — the same head ID, branch and
	// binding — and prepared as a new head is (.worktreeinclude, Setup).
	// Without it that error stays: a missing head is never rebuilt
	// silently. A head that is missing for another reason (its branch is
	// gone, another directory took its place) is refused as without it.
	// Recreate with ReadOnly is InvalidArgument.
	Recreate bool
	// Wait is how long an isolated head that another holder has open is
	// waited for (polled, with backoff) before AlreadyBound; 0 answers
	// AlreadyBound at once. A context that ends first ends the wait.
	Wait time.Duration
	// Setup and Teardown configure the workspace Reopen opens, as
	// OpenOptions' do; OpenHead uses its workspace's and ignores these.
	Setup, Teardown *grove.Hook
	// Remote is the remote of the workspace Reopen opens, as OpenOptions'
	// is; OpenHead uses its workspace's and ignores it.
	Remote *grove.Remote
	// Sandbox is the sandbox of the workspace Reopen opens, as
	// OpenOptions' is; OpenHead uses its workspace's and ignores it.
	Sandbox *grove.Sandbox
	// Services are the services of the workspace Reopen opens, as
	// OpenOptions' are; OpenHead uses its workspace's and ignores it.
	Services *Services
	// WatchChanges is OpenOptions' for the workspace Reopen opens;
	// OpenHead uses its workspace's and ignores it.
	WatchChanges bool
}

// check refuses options that contradict each other.
func (o *ReopenOptions) check(op, head string) error {
	if o != nil && o.ReadOnly && o.AllowArchived {
		return fail(grove.InvalidArgument, op, head, "ReadOnly with AllowArchived: a read-only open changes nothing")
	}
	if o != nil && o.ReadOnly && o.Recreate {
		return fail(grove.InvalidArgument, op, head, "ReadOnly with Recreate: a read-only open changes nothing")
	}
	return nil
}

// CheckpointOptions configure Head.Checkpoint and the checkpoints the
// workspace layer takes itself (a restore's safety checkpoint, a fork's
// checkpoint of its source). The zero value (or nil) takes the defaults.
type CheckpointOptions struct {
	// Message is the commit message; empty means "grove checkpoint" (or,
	// for the checkpoints the workspace layer takes, a message saying why).
	Message string
	// Author is the commit's author and committer; zero means
	// DefaultAuthor, so that checkpoints work where no user.name is set.
	Author grove.Signature
	// MaxNewFileSize caps the size of new untracked files a checkpoint
	// captures: 0 means DefaultMaxNewFileSize, negative means no cap.
	// Larger files are listed in CheckpointResult.Skipped.
	MaxNewFileSize int64
	// Include names ignored files or directories (slash paths, valid FS
	// names) to capture anyway.
	Include []string
	// Paths, when not empty, narrows Head.Checkpoint to these paths
	// (valid FS names; a directory stands for everything under it): the
	// commit is the current checkpoint with those paths as they are now
	// and every other change left uncommitted, for the next whole
	// checkpoint. It is for a caller that knows what it wrote (an agent's
	// file tool) and wants that captured at once, in time that grows
	// with the paths rather than the head. A backend without
	// Capabilities.PathCheckpoints takes a whole checkpoint instead,
	// which holds them too. The checkpoints Restore, Fork, Land and
	// Destroy take for safety are always whole: Paths is ignored there.
	Paths []string
}

// RestoreOptions configure Head.Restore. The zero value (or nil) keeps the
// head's uncommitted work in a safety checkpoint with default options.
type RestoreOptions struct {
	// Discard throws the head's uncommitted changes away instead of
	// taking a safety checkpoint of them first.
	Discard bool
	// Checkpoint configures the safety checkpoint; an empty Message says
	// which revision the head was restored to.
	Checkpoint CheckpointOptions
}

// DestroyOptions configure Head.Destroy. The zero value (or nil) takes a
// final checkpoint of uncommitted work first.
type DestroyOptions struct {
	// Discard throws uncommitted changes away instead of taking a final
	// checkpoint of them.
	Discard bool
	// KeepRunning leaves the processes grove started in the head running
	// (Destroy stops them first otherwise: see Head.StopProcesses).
	KeepRunning bool
	// SkipTeardown destroys the head without running the workspace's
	// Teardown hook.
	SkipTeardown bool
}

// LogOptions configure Head.Log. The zero value (or nil) lists every
// checkpoint.
type LogOptions struct {
	// Limit lists at most this many checkpoints; 0 means all, negative is
	// InvalidArgument.
	Limit int
}

// ForkOptions configure Head.Fork. The zero value (or nil) forks from a
// checkpoint of the source's state now.
type ForkOptions struct {
	// From forks from this checkpoint (or any revision) without taking a
	// checkpoint of the source. Empty forks from the source's state now,
	// uncommitted work included, by checkpointing it first.
	From grove.Rev
	// Checkpoint configures the checkpoint of the source when From is
	// empty; an empty Message names the fork.
	Checkpoint CheckpointOptions
}

// RestoreResult is what Head.Restore returns.
type RestoreResult struct {
	// Safety is the checkpoint taken of the dirty head before restoring,
	// or nil when the head was clean or the caller discarded.
	Safety *grove.CheckpointResult
	// Commit is the commit the head's tree now equals.
	Commit grove.CheckpointID
}

// DestroyResult is what Head.Destroy returns.
type DestroyResult struct {
	// Final is the checkpoint taken of the dirty head before destroying
	// it, or nil when it was clean or the caller discarded.
	Final *grove.CheckpointResult
}

// driverOpen is the driver's form of o (nil: the defaults).
func driverOpen(o *OpenOptions) *backend.OpenOptions {
	if o == nil {
		return &backend.OpenOptions{Sandbox: &grove.Sandbox{}}
	}
	return &backend.OpenOptions{HeadsDir: o.HeadsDir, Setup: o.Setup, Teardown: o.Teardown, Remote: o.Remote, Sandbox: sandboxOf(o.Sandbox), WatchChanges: o.WatchChanges}
}

// sandboxOf is a copy of sb, the host's for nil.
func sandboxOf(sb *grove.Sandbox) *grove.Sandbox {
	if sb == nil {
		return &grove.Sandbox{}
	}
	c := *sb
	c.ReadOnly, c.Env = slices.Clone(sb.ReadOnly), slices.Clone(sb.Env)
	return &c
}

// driverReopen is the driver's form of o (nil: the defaults).
func driverReopen(o *ReopenOptions) *backend.ReopenOptions {
	if o == nil {
		return &backend.ReopenOptions{Sandbox: &grove.Sandbox{}}
	}
	return &backend.ReopenOptions{AllowArchived: o.AllowArchived, ReadOnly: o.ReadOnly, Recreate: o.Recreate, Setup: o.Setup, Teardown: o.Teardown, Remote: o.Remote, Sandbox: sandboxOf(o.Sandbox), WatchChanges: o.WatchChanges}
}

// driverCheckpoint is the driver's form of o (nil: the defaults), with
// message used when o names none. Include entries must be valid FS names.
func driverCheckpoint(op string, o *CheckpointOptions, message string) (*backend.CheckpointOptions, error) {
	d := &backend.CheckpointOptions{Message: message, Author: grove.DefaultAuthor, MaxNewFileSize: grove.DefaultMaxNewFileSize}
	if o == nil {
		return d, nil
	}
	if o.Message != "" {
		d.Message = o.Message
	}
	if o.Author != (grove.Signature{}) {
		d.Author = o.Author
	}
	switch {
	case o.MaxNewFileSize > 0:
		d.MaxNewFileSize = o.MaxNewFileSize
	case o.MaxNewFileSize < 0:
		d.MaxNewFileSize = -1
	}
	for _, p := range o.Include {
		if err := grove.CheckPath(op, p); err != nil {
			return nil, err
		}
	}
	d.Include = append([]string(nil), o.Include...)
	return d, nil
}

// driverPaths checks a checkpoint's Paths and returns them in the
// driver's form: nil when the backend cannot narrow (a whole checkpoint
// holds them too, as it does when "." is among them).
func driverPaths(op string, paths []string, caps grove.Capabilities) ([]string, error) {
	for _, p := range paths {
		if err := grove.CheckPath(op, p); err != nil {
			return nil, err
		}
	}
	if !caps.PathCheckpoints || len(paths) == 0 || slices.Contains(paths, ".") {
		return nil, nil
	}
	return slices.Clone(paths), nil
}

// driverDestroy is the driver's form of o: the final checkpoint and
// Discard are the workspace layer's, not the driver's.
func driverDestroy(o *DestroyOptions) *backend.DestroyOptions {
	if o == nil {
		return &backend.DestroyOptions{}
	}
	return &backend.DestroyOptions{SkipTeardown: o.SkipTeardown}
}

// driverLog is the driver's form of o (nil: the defaults).
func driverLog(o *LogOptions) *backend.LogOptions {
	if o == nil {
		return &backend.LogOptions{}
	}
	return &backend.LogOptions{Limit: o.Limit}
}

// ReconcileOptions configure Workspace.Reconcile. The zero value (or nil)
// only reports.
type ReconcileOptions struct {
	// Fix repairs what is safe to repair: each FindingKind says how, and
	// nothing that could hold a file no checkpoint has is ever deleted.
	Fix bool
	// StaleLockAge is how old a git lock file must be to be called
	// stale; 0 means ten minutes.
	StaleLockAge time.Duration
}

// RetentionPolicy says which checkpoints Workspace.Retain keeps: a
// checkpoint is kept when any rule keeps it — among its head's KeepLast
// newest, newer than KeepWithin, listed in Keep, a revision its head was
// ever restored to, the commit a branch or tag points to, or its head's
// newest checkpoint (always kept). Safety and final checkpoints are
// checkpoints like any other. At least one of KeepLast and
// KeepWithin must be set, neither negative (InvalidArgument otherwise).
// Only private checkpoint refs are deleted; git's own garbage collection
// decides when unreachable commits go.
type RetentionPolicy struct {
	// KeepLast keeps each head's KeepLast newest checkpoints; 0 is no
	// such rule.
	KeepLast int
	// KeepWithin keeps checkpoints whose commit time is less than
	// KeepWithin before now; 0 is no such rule. The rules add up: a
	// checkpoint either keeps is kept.
	KeepWithin time.Duration
	// Keep lists checkpoints kept whatever their age: pass
	// engine.Engine.JournalCheckpoints, what the open sessions' journals
	// name, as the grove command does.
	Keep []grove.CheckpointID
	// DryRun deletes nothing and reports what would be deleted.
	DryRun bool
}

// driverReconcile is the driver's form of o (nil: the defaults).
func driverReconcile(o *ReconcileOptions) *backend.ReconcileOptions {
	if o == nil {
		return &backend.ReconcileOptions{StaleLockAge: grove.DefaultStaleLockAge}
	}
	d := &backend.ReconcileOptions{Fix: o.Fix, StaleLockAge: o.StaleLockAge}
	if d.StaleLockAge <= 0 {
		d.StaleLockAge = grove.DefaultStaleLockAge
	}
	return d
}

// driverRetain is the driver's form of p, validated.
func driverRetain(op string, p *RetentionPolicy) (*backend.RetentionPolicy, error) {
	if p == nil || p.KeepLast < 0 || p.KeepWithin < 0 || (p.KeepLast == 0 && p.KeepWithin == 0) {
		return nil, fail(grove.InvalidArgument, op, "", "a retention policy needs KeepLast or KeepWithin, neither negative")
	}
	return &backend.RetentionPolicy{KeepLast: p.KeepLast, KeepWithin: p.KeepWithin, Keep: append([]grove.CheckpointID(nil), p.Keep...), DryRun: p.DryRun}, nil
}
