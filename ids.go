package grove

// ID names a backend. It is persisted in bindings, so a backend keeps its ID
// forever ("git", "memory").
type ID string

// WorkspaceID names a workspace stably: it survives moves of the repository.
type WorkspaceID string

// HeadID names a head stably and is never reused (a UUID).
type HeadID string

// CheckpointID names a checkpoint: for a Git store its full lowercase
// hexadecimal commit hash; a backend that does not store Git commits uses
// another stable name in the same form, at least 40 lowercase hexadecimal
// digits. Any CheckpointID a head reports resolves as a Rev in its
// workspace.
type CheckpointID string

// Rev is a revision: a branch, a tag, a commit hash or a CheckpointID.
type Rev string

// Live, used only as the `to` argument of Head.Diff, means the head's
// working tree as it is now. Everywhere else an empty Rev is
// InvalidArgument.
const Live Rev = ""

// Access is how sessions may hold a head.
type Access string

const (
	// Isolated heads have at most one live holder across all processes; a
	// second holder gets AlreadyBound.
	Isolated Access = "isolated"
	// Shared heads take many holders; their writes use compare-and-set.
	Shared Access = "shared"
)

// Valid reports whether a is Isolated or Shared.
func (a Access) Valid() bool { return a == Isolated || a == Shared }

// HeadState is the life-cycle state of a head.
type HeadState string

const (
	StateActive    HeadState = "active"    // can be opened and bound
	StateArchived  HeadState = "archived"  // files kept, cannot be bound until unarchived
	StateDestroyed HeadState = "destroyed" // files and registration gone, checkpoints kept
)

// Capabilities describe, as data, what a backend can do, so that a caller can
// refuse a configuration before a session starts. A capability that is
// absent is answered with Unimplemented, never silently ignored. A method a
// backend lacks answers Unimplemented whatever its arguments, before it
// looks at them.
type Capabilities struct {
	// Attach: heads over existing checkouts (HeadSpec.Attach). Without it
	// CreateHead of an attached head is Unimplemented.
	Attach bool
	// SharedCAS: FS.WriteFileIf is a compare-and-set on shared heads: of
	// holders in one process racing with one expected digest, exactly one
	// wins and the others get Conflict (across processes it is promised
	// only by a backend that says so in its own docs). Without it
	// WriteFileIf answers Unimplemented.
	SharedCAS bool
	// HostRoot: heads are directories on the host (HeadInfo.Root,
	// HeadSpec.Dir, OpenOptions.HeadsDir). Without it a Dir or HeadsDir is
	// Unimplemented and HeadInfo.Root is empty.
	HostRoot bool
	// CrossProcessIsolation: isolation holds across processes: a second
	// holder of an isolated head in another process gets AlreadyBound.
	// Without it isolation is promised within one process only: another
	// process may find nothing (NotFound, for a backend that is not
	// Persistent) or take the head.
	CrossProcessIsolation bool
	// Persistent: heads, their files and their checkpoints survive the
	// process: a binding reopens through a Backend of a later process, and
	// through a new Backend after this one was closed. Without it a binding
	// from another process finds nothing: NotFound, never a different head.
	Persistent bool
	// Symlinks: FS.Symlink and symlinks in checkpoints. Without it
	// Symlink answers Unimplemented.
	Symlinks bool
	// FileModes: FS.Chmod and executable bits in checkpoints. A file with
	// any execute bit set (0700 or 0750 as much as 0755) is checkpointed as
	// executable and any other as not, and a restore gives each back so,
	// whatever the umask of the process that restores. Without it Chmod
	// answers Unimplemented.
	FileModes bool
	// Recreate: Reopen and OpenHead with ReopenOptions.Recreate rebuild a
	// head whose files are gone. Without it the workspace layer answers a
	// Recreate that finds the head missing with Unimplemented (a head
	// that is not missing opens as without the option).
	Recreate bool
	// Remote: workspaces take OpenOptions.Remote, push their heads'
	// checkpoints there, share one workspace ID among the clones of one
	// project through it, and implement Relocator.
	Remote bool
	// Sparse: sparse heads (HeadSpec.Sparse), which materialise only a
	// set of directories and whose checkpoints are whole trees. Without
	// it the workspace layer answers a create with a Sparse set with
	// Unimplemented.
	Sparse bool
	// PathCheckpoints: Checkpoint honours CheckpointOptions.Paths,
	// capturing those paths alone on top of the current checkpoint.
	// Without it the workspace layer takes a whole checkpoint instead
	// (which holds the paths too).
	PathCheckpoints bool
}

// WorkspaceInfo identifies a workspace.
type WorkspaceInfo struct {
	ID      WorkspaceID // stable across moves
	Backend ID          // the backend that opened it
	Locator string      // as resolved by the backend (for Git: the common git dir)
}
