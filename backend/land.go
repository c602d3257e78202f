package backend

import (
	"context"

	"github.com/groveworks/grove"
)

// Lander is implemented by a driver Head whose work can be landed on a
// branch and exported as patches. The workspace layer answers Land and
// Patch with Unimplemented for a head that does not implement it.
type Lander interface {
	// Land writes the head's work (its branch's commits since it and
	// LandOptions.Onto diverged) onto Onto, or onto a new branch, as
	// LandOptions says. It first checks, touching no worktree and no ref,
	// that the result merges cleanly: a conflict is Conflict wrapping a
	// *LandConflict that lists the paths, with nothing changed. It never
	// moves a branch a worktree has checked out without updating that
	// worktree's index and files with it, and refuses (FailedPrecondition
	// naming the worktree) when that worktree has changes of its own, is
	// a sparse checkout (entries marked skip-worktree or assume-unchanged),
	// or has a file, untracked or ignored, where the land would write. The head, its
	// branch and its checkpoints are never changed.
	Land(ctx context.Context, opts *LandOptions) (grove.LandResult, error)
	// Patch returns the commits from..to (merges left out) as a series in
	// git format-patch's mbox format, or with opts.Squash as one patch of
	// their whole change. Empty from means the head's base (the commit it
	// was created from), empty to its branch's tip (the checkpoint the
	// head is at).
	Patch(ctx context.Context, from, to grove.Rev, opts *PatchOptions) ([]byte, error)
}

// LandOptions configure a driver's Land, normalized by the workspace
// layer: Strategy is set and valid, Author is set.
type LandOptions struct {
	Onto     string // the branch to land on; empty: the branch the repository's HEAD names
	Strategy grove.LandStrategy
	Message  string          // the squash or merge commit's message; empty: made from the head's name and checkpoint messages
	Branch   string          // write the result to this new branch instead of moving Onto; empty: move Onto
	DryRun   bool            // check and compute, but move no ref and touch no worktree
	Author   grove.Signature // the author and committer of the commits Land makes (a rebase keeps each commit's author)
	// Expect, when set, is the commit the head's branch must be at: the
	// work a reviewer saw. A driver reads the branch's tip once and lands
	// from it; a tip other than Expect is Conflict, and nothing is written.
	Expect grove.CheckpointID
}

// PatchOptions configure a driver's Patch.
type PatchOptions struct {
	Squash bool // one patch of the whole change instead of one per commit
}
