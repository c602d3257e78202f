package grove

import (
	"fmt"
	"time"
)

// HeadInfo describes a head.
type HeadInfo struct {
	ID       HeadID
	Name     string
	Access   Access
	Attached bool         // over an existing checkout the user owns
	Branch   string       // the branch's short name, such as "grove/agent-1"
	Root     string       // the head's directory on the host, "" if it has none
	Base     CheckpointID // the commit the head was created from
	State    HeadState
	// Sparse is the set of directories a sparse head materialises (git's
	// cone mode: with every file at the top and directly in a directory on
	// the way to one of them), nil for a head with the whole tree, empty
	// for one with the top's files alone.
	Sparse []string
	// NoSubmodules is set for a head whose submodules are left empty
	// directories (as git worktree add leaves them) instead of checked
	// out; a fork of it is made the same way.
	NoSubmodules bool
}

// Signature names the author of a checkpoint.
type Signature struct {
	Name  string
	Email string
}

// DefaultAuthor is the author of checkpoints whose options name none, so
// that checkpoints work on a machine with no user.name configured.
var DefaultAuthor = Signature{Name: "grove", Email: "grove@localhost"}

// DefaultMaxNewFileSize is the size cap of new untracked files when
// CheckpointOptions.MaxNewFileSize is zero.
const DefaultMaxNewFileSize = 10 << 20

// Checkpoint is one commit of a head's state, as Log returns it.
type Checkpoint struct {
	ID      CheckpointID
	Parent  CheckpointID // "" for a root commit
	Message string
	Author  Signature
	Time    time.Time
}

// SkipReason says why a path was not captured.
type SkipReason string

const (
	SkipTooLarge       SkipReason = "too-large"       // a new untracked file over the size cap
	SkipEmptyDirectory SkipReason = "empty-directory" // git cannot hold an empty directory
	SkipIrregular      SkipReason = "irregular"       // a FIFO, socket or device
	// SkipSparseConflict: a file or link where a sparse head keeps a
	// directory outside its set; capturing it would drop that directory.
	SkipSparseConflict SkipReason = "sparse-conflict"
)

// Skipped is a path a checkpoint did not capture.
type Skipped struct {
	Path   string
	Reason SkipReason
	Size   int64 // for SkipTooLarge: the file's size
}

// CheckpointResult is what one Checkpoint call returns.
type CheckpointResult struct {
	Checkpoint
	New     bool      // false when nothing changed and Checkpoint is the current one
	Skipped []Skipped // sorted by path
}

// ChangeKind says how a path differs from the head's current commit.
type ChangeKind string

const (
	ChangeAdded     ChangeKind = "added"     // staged in the index, not in the commit
	ChangeModified  ChangeKind = "modified"  // content or mode differs from the commit
	ChangeDeleted   ChangeKind = "deleted"   // in the commit, gone from the tree
	ChangeUntracked ChangeKind = "untracked" // new, not ignored, not staged
)

// Change is one changed path.
type Change struct {
	Path string
	Kind ChangeKind
}

// Operation is a merge-like git operation in progress in a head.
type Operation string

const (
	OpNone         Operation = ""
	OpMerge        Operation = "merge"
	OpRebase       Operation = "rebase"
	OpCherryPick   Operation = "cherry-pick"
	OpRevert       Operation = "revert"
	OpBisect       Operation = "bisect"
	OpApplyMailbox Operation = "am"
)

// Status is a head's state now.
type Status struct {
	Dirty          bool         // a checkpoint now would make a commit
	Changes        []Change     // sorted by path
	Conflicts      []string     // unmerged paths, sorted
	Commit         CheckpointID // the head's current commit
	LastCheckpoint CheckpointID // the newest checkpoint in Log, "" if none
	InProgress     Operation    // a merge-like operation in progress, if any
	Archived       bool
	// LFSMissing lists, sorted, the Git LFS files the head holds as their
	// pointers because the repository's LFS store lacked their content
	// (or held it corrupt) at the last checkout; a later checkout fills
	// them once the store has it. They are not changes.
	LFSMissing []string
	// Submodules are the head's checked-out submodules, recursively,
	// sorted by path, each with the changes inside it; a submodule whose
	// commit or files changed is also a change of its path in Changes.
	Submodules []SubmoduleStatus
}

// SubmoduleStatus is the state of one checked-out submodule of a head.
type SubmoduleStatus struct {
	Path     string       `json:"path"`     // from the head's top, slash-separated
	Name     string       `json:"name"`     // its name in .gitmodules
	Recorded CheckpointID `json:"recorded"` // the commit its superproject's index records
	Commit   CheckpointID `json:"commit"`   // the commit checked out in it (its HEAD)
	// Changes are its files' changes, paths from the head's top, sorted:
	// what the next checkpoint commits in the submodule's repository.
	Changes []Change `json:"changes,omitempty"`
}

// SubmoduleError is the cause (inside an *Error whose Code is NotFound)
// of an operation that could not check a head's submodule out: the
// submodule's repository lacks the commit the head's tree records.
// Nothing is fetched for it: fetching it into the repository (git fetch
// in the main checkout's submodule), or a head made without submodules,
// is the way on.
type SubmoduleError struct {
	Path       string // the submodule's path in the head
	Name       string // its name in .gitmodules
	Commit     string // the commit the tree records
	Repository string // the submodule's repository, which lacks it
}

func (e *SubmoduleError) Error() string {
	return fmt.Sprintf("submodule %q (%s): commit %s is not in its repository %s", e.Name, e.Path, e.Commit, e.Repository)
}

// LFSFetch is what a fetch of a head's missing Git LFS content did: the
// files given their content, and those still their pointers, sorted.
type LFSFetch struct {
	Filled  []string `json:"filled"`
	Missing []string `json:"missing"`
}

// FileStat is one file's line counts in a Diff.
type FileStat struct {
	Path    string
	Added   int
	Deleted int
}

// Diff is the difference between two trees.
type Diff struct {
	Patch string // a unified patch, as git diff prints it
	// Files lists the changed files, one entry each, sorted by path.
	Files []FileStat
}
