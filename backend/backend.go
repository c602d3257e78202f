package backend

import (
	"context"

	"github.com/groveworks/grove"
)

// Backend is the driver interface a storage implementation satisfies. Users
// do not call it directly: they hold *workspace.Workspace and
// *workspace.Head, which validate arguments, serialize calls per head and
// wrap errors before reaching the backend.
//
// Every method that can block takes a context first and returns promptly
// once it is cancelled, with an error for which errors.Is(err,
// context.Canceled) (or context.DeadlineExceeded) holds and CodeOf is
// Canceled. Cancellation is honoured during the call as well as before it,
// and a cancelled call leaves the head usable. Every error is, or wraps, an
// *Error whose code is the one the method's contract names.
//
// Options pointers passed by the workspace layer are never nil, and their
// values are normalized: defaults filled in, paths and names validated.
// The options a user fills are package workspace's; what only the
// workspace layer acts on (Discard, safety and final checkpoints) never
// reaches a driver.
type Backend interface {
	// ID returns the backend's persistent ID; it never changes.
	ID() grove.ID

	// Capabilities returns what the backend can do; the value never changes.
	Capabilities() grove.Capabilities

	// OpenWorkspace opens the workspace named by locator (for the Git
	// backend, any path inside a repository). A locator that names nothing
	// is NotFound.
	OpenWorkspace(ctx context.Context, locator string, opts *OpenOptions) (Workspace, error)

	// Reopen opens exactly the head a binding names, strictly: every check
	// that fails is a typed error (BindingCorrupt for a payload it cannot
	// read, NotFound with Reason missing, IdentityMismatch with Reason
	// workspace-id or head-id, Destroyed, Archived unless
	// opts.AllowArchived, AlreadyBound for an isolated head held elsewhere),
	// and it never returns a different or an empty head. A head whose
	// directory or files are gone is NotFound with Reason missing; a head
	// whose branch is gone is NotFound with Reason branch. With opts.Recreate
	// (and Capabilities.Recreate), a head whose files are gone is rebuilt
	// from its branch's commit under the same binding. The returned head's
	// Binding() is Equal to b. The returned workspace is the head's own and
	// is closed by the caller after the head. Reopen never walks the head's
	// files: its cost does not grow with their number.
	Reopen(ctx context.Context, b grove.Binding, opts *ReopenOptions) (Workspace, Head, error)

	// As sets target to a backend-specific value and reports whether it
	// could; it lets callers reach features outside this interface.
	As(target any) bool

	// Close releases the backend. A second Close returns an error. After
	// Close every method that can block, of the Backend and of the
	// workspaces and heads opened from it, answers FailedPrecondition; the
	// FS of a head still open stays its working tree until the head is
	// closed.
	Close() error
}

// Workspace is one lineage of heads: for the Git backend, one repository.
type Workspace interface {
	// Info returns the workspace's identity; it never changes.
	Info() grove.WorkspaceInfo

	// CreateHead creates a head as spec says (the spec is validated by the
	// caller: a valid name, a valid access, Attach exclusive with Isolated
	// and From). A name already used by a live or archived head is
	// AlreadyExists; an explicit Branch that exists is AlreadyExists; a From
	// that does not resolve is NotFound; a capability the backend lacks
	// (Attach, Dir) is Unimplemented; a Dir that exists and is not empty is
	// AlreadyExists. A failed create leaves nothing behind: no branch, no
	// directory, no registration. An isolated head is returned holding its
	// isolation lock. The head starts at spec.From on its own branch:
	// spec.Branch, or grove/<name> (the next free grove/<name>-N when that
	// is taken).
	CreateHead(ctx context.Context, spec *HeadSpec) (Head, error)

	// OpenHead opens the live head with that name, taking its isolation lock
	// if it is isolated (AlreadyBound if held). An unknown or destroyed name
	// is NotFound; an archived head is Archived unless opts.AllowArchived,
	// which unarchives it.
	OpenHead(ctx context.Context, name string, opts *ReopenOptions) (Head, error)

	// Heads lists the live and archived heads, ordered by name.
	Heads(ctx context.Context) ([]grove.HeadInfo, error)

	// SetArchived archives or unarchives the head with that ID, whether or
	// not anyone holds it. A destroyed head is Destroyed; an unknown ID is
	// NotFound.
	SetArchived(ctx context.Context, id grove.HeadID, archived bool) error

	// Materialize writes the tree of revision at into dir, which must be
	// empty or absent and must not lie inside a head: the files are
	// byte-identical to the checkpoint, modes and symlinks included. A
	// non-empty dir, or a dir inside a head, is FailedPrecondition and is
	// left untouched; a revision that does not resolve is NotFound.
	Materialize(ctx context.Context, at grove.Rev, dir string) error

	// Close releases the workspace. It does not close the Backend, and heads
	// opened from the workspace stay usable until they are closed.
	Close() error
}

// Head is one mutable view of a workspace. Its methods other than Status,
// Info, Binding and FS are never called concurrently on one Head value
// (the workspace layer serializes them); Status, Info, Binding and FS may
// be called at any time, concurrently with anything.
type Head interface {
	// Info describes the head now.
	Info() grove.HeadInfo

	// Binding returns the binding that reopens exactly this head. It is
	// constant for the head's life.
	Binding() grove.Binding

	// FS returns the head's file system: its working tree.
	FS() grove.FS

	// Checkpoint commits the head's whole state: tracked files and untracked
	// files that are not ignored, with modes and symlinks, plus ignored
	// files that opts.Include names. A name in opts.Include that is a
	// directory includes every file under it. Ignored means what git means:
	// the patterns of the .gitignore files in the head, each applying to its
	// directory and below, deeper and later patterns winning, a leading "!"
	// re-including (a backend over a Git repository also honours the
	// repository's info/exclude; none reads a user's global excludes file).
	// The commit's parent is the head's current commit. For a head grove
	// created, with no merge-like operation in progress, the branch advances
	// to the commit; for an attached head, or with an operation in progress,
	// branch and index are left alone. Every checkpoint is also kept
	// reachable by a private ref. When nothing changed, no commit is made
	// and the current checkpoint is returned with New false (on a fresh
	// head: its base commit). New untracked files larger than
	// opts.MaxNewFileSize (0: 10 MiB; negative: no cap), empty directories
	// and irregular files are not captured and are listed in Skipped.
	Checkpoint(ctx context.Context, opts *CheckpointOptions) (grove.CheckpointResult, error)

	// Restore makes the head's tracked content equal to revision to, removes
	// untracked files that are not ignored and not in to, and never touches
	// ignored files; where to tracks a path that is an ignored file in the
	// head now (with other content), it fails with Conflict and changes
	// nothing. For a head grove created the branch is reset to to; for an
	// attached head only the working tree changes. The caller (the workspace
	// layer) takes the safety checkpoint first; Restore itself never
	// checkpoints. A revision that does not resolve is NotFound and changes
	// nothing. Running the same Restore again converges on to.
	Restore(ctx context.Context, to grove.Rev) (RestoreResult, error)

	// Log lists the head's checkpoints, newest first, from its private refs
	// (not from the branch's history): a restore to an older checkpoint
	// leaves the newer ones listed. A fresh head has no checkpoints: Log
	// returns an empty list, not an error.
	Log(ctx context.Context, opts *LogOptions) ([]grove.Checkpoint, error)

	// Commits lists the commits of the head's branch that are not reachable
	// from since, newest first: the drift a resumed session reports. A
	// since that does not resolve is NotFound.
	Commits(ctx context.Context, since grove.Rev) ([]grove.CheckpointID, error)

	// Status reports what a checkpoint now would capture, without taking any
	// lock that would block a concurrent git process. It may run while
	// another call on the same head does (a poll during a checkpoint) and
	// answers from a consistent state of the head. Dirty is true exactly
	// when a checkpoint now would make a commit, so a new file a checkpoint
	// would skip does not make the head dirty; LastCheckpoint is the newest
	// checkpoint in Log.
	Status(ctx context.Context) (grove.Status, error)

	// Diff compares two revisions, or a revision and the working tree when
	// to is Live. A revision that does not resolve is NotFound. A change of
	// mode alone is a changed file, listed in Files, and the patch says so.
	Diff(ctx context.Context, from, to grove.Rev) (grove.Diff, error)

	// SetArchived archives or unarchives the head. The holder keeps working
	// while the head is archived; only new binds are refused.
	SetArchived(ctx context.Context, archived bool) error

	// Destroy removes the head's directory and registration, keeps its
	// branch and every checkpoint, leaves a tombstone so that its binding
	// reopens as Destroyed, and closes the head. The caller (the workspace
	// layer) takes the final checkpoint first unless its user discards;
	// Destroy itself never checkpoints. Destroying an attached head only
	// forgets it: files, branch and index stay.
	Destroy(ctx context.Context, opts *DestroyOptions) error

	// Close releases the head and its isolation lock. It never deletes
	// anything. A second Close returns an error.
	Close() error
}

// OpenOptions configure OpenWorkspace.
type OpenOptions struct {
	// HeadsDir is the directory under which new heads' directories are made
	// when HeadSpec.Dir is empty. Empty means the backend's default. A
	// backend without HostRoot answers a non-empty HeadsDir with
	// Unimplemented.
	HeadsDir string
	// Setup, when set, runs in every head the workspace makes (a create, a
	// fork, a Recreate) once its files are in place and before the head
	// is returned; a setup that fails or times out undoes that create
	// completely (for a Recreate: the rebuilt directory), and the error,
	// FailedPrecondition, wraps a *HookError with its output. Teardown,
	// when set, runs in a head's directory before Destroy removes it; a
	// teardown that fails refuses the destroy the same way, with nothing
	// removed (DestroyOptions.SkipTeardown skips it). A backend without
	// HostRoot answers either with Unimplemented.
	Setup, Teardown *grove.Hook
	// Remote, when set, is the Git remote the workspace's checkpoints
	// travel to (see Remote); a backend without Capabilities.Remote
	// answers it with Unimplemented.
	Remote *grove.Remote
	// Sandbox is where Setup and Teardown run (never nil: the workspace
	// layer fills the host's); with a sandbox, a backend whose heads are
	// not Sealers answers a hook with Unimplemented.
	Sandbox *grove.Sandbox
	// HeadEnv, when set, gives the variables of a head's services (its
	// ports, its names: see workspace.Services), which Setup and Teardown
	// get after the head's own GROVE_HEAD and friends; its error fails
	// the hook's operation as the hook's own would. A backend that runs
	// no hooks ignores it.
	HeadEnv func(ctx context.Context, head grove.HeadInfo) ([]string, error)
	// WatchChanges lets each head the workspace opens learn, while it is
	// open, which of its paths change, so that a whole Checkpoint and
	// Status look at those alone: the results are those of a full scan,
	// always (a backend scans whenever it cannot vouch for what it was
	// told). A backend that cannot watch ignores it.
	WatchChanges bool
}

// ReopenOptions configure Reopen and OpenHead.
type ReopenOptions struct {
	// AllowArchived unarchives an archived head instead of failing with
	// Archived.
	AllowArchived bool
	// ReadOnly opens the head to be read only, without taking its isolation
	// lock: a head held elsewhere opens (its holder keeps it), an archived
	// head opens without being unarchived, and closing the handle releases
	// nothing. Nothing is changed through such a handle (the workspace
	// layer hands it out as a read-only view, and never sets ReadOnly
	// together with AllowArchived).
	ReadOnly bool
	// Recreate rebuilds a head whose directory is gone (Reason missing)
	// instead of failing: at its recorded directory, on its branch, with
	// the files of the branch's commit (its last checkpoint, or what it
	// was last restored to), the same head ID and so the same binding;
	// Setup runs in it as after a create. Anything else (a head whose
	// repository moved: Maintainer.Reconcile re-links those) is refused as
	// without it. A backend without Capabilities.Recreate ignores it (the
	// workspace layer then answers a missing head with Unimplemented).
	Recreate bool
	// Setup and Teardown are the hooks of the workspace Reopen opens, as
	// OpenOptions' are for OpenWorkspace; OpenHead uses its workspace's.
	Setup, Teardown *grove.Hook
	// Remote is the remote of the workspace Reopen opens, as OpenOptions'
	// is for OpenWorkspace; OpenHead uses its workspace's.
	Remote *grove.Remote
	// Sandbox is the sandbox of the workspace Reopen opens, as
	// OpenOptions' is for OpenWorkspace; OpenHead uses its workspace's.
	Sandbox *grove.Sandbox
	// HeadEnv is the head variables of the workspace Reopen opens, as
	// OpenOptions' are for OpenWorkspace; OpenHead uses its workspace's.
	HeadEnv func(ctx context.Context, head grove.HeadInfo) ([]string, error)
	// WatchChanges is OpenOptions' for the workspace Reopen opens;
	// OpenHead uses its workspace's.
	WatchChanges bool
}

// HeadSpec says what head CreateHead makes.
type HeadSpec struct {
	Name   string       // unique among live and archived heads; a path element and a ref component
	Access grove.Access // Isolated (the default) or Shared; Attach forces Shared
	From   grove.Rev    // base revision or checkpoint; empty means the workspace's current HEAD
	Branch string       // the head's branch; empty means grove/<name> or the next free grove/<name>-N
	Dir    string       // the head's directory; empty means under OpenOptions.HeadsDir
	Attach string       // an existing checkout to attach to, instead of creating one
	// Sparse, when not nil, makes a sparse head: only these directories
	// are materialised (see grove.HeadInfo.Sparse; the workspace layer has
	// normalised them), the rest of the tree is kept, unchanged, in every
	// checkpoint; a file written outside them is captured as any other;
	// a set of no directory is the top's files alone (an empty, non-nil
	// Sparse). The set is the backend's record, never read back from the
	// head.
	Sparse []string
	// SparseFromMain, with Sparse nil, asks for the sparse set of the
	// repository's main checkout, where it has one the backend can read
	// (the Git backend: a cone-mode sparse checkout); the whole tree
	// otherwise.
	SparseFromMain bool
	// NoSubmodules leaves the head's submodules empty directories, as git
	// worktree add does, in this head and through its restores and
	// repairs (grove.HeadInfo.NoSubmodules); by default they are checked
	// out at the commits the tree records, from the repositories the
	// repository holds for them.
	NoSubmodules bool
}

// CheckpointOptions configure Checkpoint. The zero value takes the defaults.
type CheckpointOptions struct {
	Message        string          // empty: "grove checkpoint"
	Author         grove.Signature // zero: DefaultAuthor
	MaxNewFileSize int64           // 0: DefaultMaxNewFileSize; negative: no cap
	Include        []string        // ignored files or directories to capture anyway (slash paths)
	// Scan looks at every file, whatever the backend knows of what
	// changed (OpenOptions.WatchChanges): the workspace layer sets it for
	// the checkpoints it takes before a restore, a fork, a destroy or a
	// land, which capture whatever is there.
	Scan bool
	// Paths, when not empty (only with Capabilities.PathCheckpoints),
	// narrows the checkpoint: its tree is the current checkpoint's with
	// each of these paths (slash paths; a directory stands for
	// everything under it) as a whole checkpoint would capture it now,
	// and removed where the head no longer holds it; every other path
	// is as the current checkpoint has it, changed or not. Skipped
	// lists what was skipped among them.
	Paths []string
}

// RestoreResult is what a driver's Restore returns.
type RestoreResult struct {
	// Commit is the commit the head's tree now equals.
	Commit grove.CheckpointID
}

// DestroyOptions configure a driver's Destroy. The final checkpoint and
// Discard are the workspace layer's, never the driver's.
type DestroyOptions struct {
	// SkipTeardown destroys the head without running the workspace's
	// Teardown hook.
	SkipTeardown bool
}

// LogOptions configure Log.
type LogOptions struct {
	Limit int // at most this many checkpoints; 0 means all
}
