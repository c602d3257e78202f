package grove

import (
	"strings"
)

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
