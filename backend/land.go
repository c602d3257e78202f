package backend

import (
	"context"
	"strings"
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
	// naming the worktree) when that worktree has changes of its own or a
	// file, untracked or ignored, where the land would write. The head, its
	// branch and its checkpoints are never changed.
	Land(ctx context.Context, opts *LandOptions) (LandResult, error)
	// Patch returns the commits from..to (merges left out) as a series in
	// git format-patch's mbox format, or with opts.Squash as one patch of
	// their whole change. Empty from means the head's base (the commit it
	// was created from), empty to its branch's tip (the checkpoint the
	// head is at).
	Patch(ctx context.Context, from, to Rev, opts *PatchOptions) ([]byte, error)
}

// LandStrategy is how Land writes a head's work onto a branch.
type LandStrategy string

const (
	// LandSquash writes one commit whose tree is the merge of the head's
	// work into the branch, with the branch's tip as its only parent
	// (git merge --squash, then git commit).
	LandSquash LandStrategy = "squash"
	// LandRebase replays each of the head's commits (merges left out), in
	// order, onto the branch, keeping their messages and authors, and
	// dropping those that become empty there while keeping those that
	// were empty from the start (git rebase's defaults).
	LandRebase LandStrategy = "rebase"
	// LandMerge writes a merge commit of the branch's tip and the head's
	// (git merge --no-ff).
	LandMerge LandStrategy = "merge"
)

// Valid reports whether s is one of the strategies.
func (s LandStrategy) Valid() bool { return s == LandSquash || s == LandRebase || s == LandMerge }

// LandOptions configure a driver's Land, normalized by the workspace
// layer: Strategy is set and valid, Author is set.
type LandOptions struct {
	Onto     string // the branch to land on; empty: the branch the repository's HEAD names
	Strategy LandStrategy
	Message  string    // the squash or merge commit's message; empty: made from the head's name and checkpoint messages
	Branch   string    // write the result to this new branch instead of moving Onto; empty: move Onto
	DryRun   bool      // check and compute, but move no ref and touch no worktree
	Author   Signature // the author and committer of the commits Land makes (a rebase keeps each commit's author)
}

// LandResult is what Land did (or, for a dry run, would do).
type LandResult struct {
	// Checkpoint is the checkpoint of uncommitted work the workspace
	// layer takes before landing (nil when it made none; drivers leave it
	// nil). It stays when the land fails.
	Checkpoint *CheckpointResult `json:"checkpoint,omitempty"`
	Onto       string            `json:"onto"`               // the branch landed on
	Branch     string            `json:"branch"`             // the branch written: Onto, or LandOptions.Branch
	Base       CheckpointID      `json:"base"`               // Onto's tip before
	Commit     CheckpointID      `json:"commit"`             // the written branch's tip after: Base when there was nothing to land
	Commits    []CheckpointID    `json:"commits"`            // the commits Land made, oldest first
	Worktree   string            `json:"worktree,omitempty"` // a worktree that had Onto checked out and was updated with it, if any
	DryRun     bool              `json:"dry_run"`
}

// LandConflict lists the paths a Land could not merge.
type LandConflict struct {
	Paths []string
}

func (c *LandConflict) Error() string {
	return "the head's work conflicts with the branch in " + strings.Join(c.Paths, ", ")
}

// PatchOptions configure a driver's Patch.
type PatchOptions struct {
	Squash bool // one patch of the whole change instead of one per commit
}
