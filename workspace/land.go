package workspace

import (
	"context"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
)

// LandOptions configure Head.Land. The zero value (or nil) squashes the
// head's work onto the branch the repository's HEAD names, with a message
// made from the head's name and its checkpoint messages.
type LandOptions struct {
	// Onto is the branch to land on; empty means the branch the
	// repository's HEAD names (the main checkout's).
	Onto string
	// Strategy is LandSquash (the default), LandRebase or LandMerge; any
	// other value is InvalidArgument.
	Strategy grove.LandStrategy
	// Message is the squash or merge commit's message; empty means the
	// head's name and the messages of the checkpoints landed (grove's own
	// "grove checkpoint" left out). A rebase keeps each commit's message.
	Message string
	// Branch writes the result to this new branch (a review branch)
	// instead of moving Onto; a branch that exists is AlreadyExists.
	Branch string
	// DryRun checks that the work merges and computes the result, moving
	// no branch and touching no worktree: LandResult says what would be
	// written, a conflict fails as it would.
	DryRun bool
	// Author is the author and committer of the commits Land makes (a
	// rebase keeps each commit's author); zero means DefaultAuthor.
	Author grove.Signature
	// Checkpoint configures the checkpoint of uncommitted work taken
	// first; an empty Message says it is before a land.
	Checkpoint CheckpointOptions
	// Expect, when set, lands only the work a reviewer saw (a dry run's
	// head): the head's branch and HEAD must be at this commit, with
	// nothing uncommitted. Land takes no checkpoint, the driver lands from
	// the branch tip it checked, and anything else is a Conflict that
	// changes nothing.
	Expect grove.CheckpointID
}

// PatchOptions configure Head.Patch. The zero value (or nil) gives one
// patch per commit.
type PatchOptions struct {
	// Squash gives one patch of the whole change, with a message made as
	// Land's.
	Squash bool
}

// driverLand is the driver's form of o (nil: the defaults).
func driverLand(op, head string, o *LandOptions) (*backend.LandOptions, error) {
	d := &backend.LandOptions{Strategy: grove.LandSquash, Author: grove.DefaultAuthor}
	if o == nil {
		return d, nil
	}
	if o.Strategy != "" {
		if !o.Strategy.Valid() {
			return nil, fail(grove.InvalidArgument, op, head, "unknown land strategy %q (squash, rebase or merge)", o.Strategy)
		}
		d.Strategy = o.Strategy
	}
	for _, b := range []string{o.Onto, o.Branch} {
		if b != "" {
			if err := validBranch(b); err != nil {
				return nil, fail(grove.InvalidArgument, op, head, "%v", err)
			}
		}
	}
	d.Onto, d.Message, d.Branch, d.DryRun, d.Expect = o.Onto, o.Message, o.Branch, o.DryRun, o.Expect
	if o.Author != (grove.Signature{}) {
		d.Author = o.Author
	}
	return d, nil
}

// Land writes the head's work onto a branch: by default one squashed
// commit on the branch the repository's HEAD names. Uncommitted work is
// checkpointed first (LandResult.Checkpoint), so what lands is the head as
// it is, unless opts.Expect names the commit to land; a DryRun takes no
// checkpoint and computes from the last one.
// What lands is the head's commits since its branch and Onto diverged, so
// landing again after a squash replays what was squashed (use a rebase, or
// a new head, for a second round). Before any branch or
// worktree is written, git merges the work in memory: a conflict is
// Conflict wrapping a *LandConflict listing the paths, with no branch or
// worktree changed (the checkpoint of uncommitted work stays). A branch a
// worktree has checked out (the user's main checkout) moves only together
// with that worktree's index and files, when it has no changes of its own
// and no file the land would write is there untracked or ignored (an
// .env is never overwritten); otherwise Land refuses with
// FailedPrecondition naming the worktree (land onto a new Branch
// instead; the error's Path is the worktree). Once git starts writing the
// worktree, the land runs to its end whatever ctx says. If Onto moves
// while the land runs, it is Conflict without a *LandConflict, with
// nothing written: run it again. Also FailedPrecondition: an attached head
// (its work is on the user's branch), an empty Onto while HEAD names no
// branch, an Onto checked out in two worktrees or by a grove head, a
// merge-like operation in progress in its worktree, git older than 2.38.
// Onto and Branch are short branch names ("main", not "refs/heads/main").
// The head's branch and its checkpoints are never rewritten. A backend
// that cannot land answers Unimplemented; a read-only view,
// PermissionDenied. opts may be nil.
func (h *Head) Land(ctx context.Context, opts *LandOptions) (grove.LandResult, error) {
	const op = "land"
	d, err := driverLand(op, h.name, opts)
	if err != nil {
		return grove.LandResult{}, err
	}
	l, ok := h.h.(backend.Lander)
	if !ok {
		return grove.LandResult{}, fail(grove.Unimplemented, op, h.name, "this backend cannot land a head's work")
	}
	unlock, err := h.begin(ctx, op, true)
	if err != nil {
		return grove.LandResult{}, err
	}
	defer unlock()
	var taken *grove.CheckpointResult
	if opts != nil && opts.Expect != "" {
		st, err := h.h.Status(ctx)
		if err != nil {
			return grove.LandResult{}, wrap(op, h.name, err)
		}
		switch {
		case st.Commit != opts.Expect:
			return grove.LandResult{}, fail(grove.Conflict, op, h.name, "the head is at %s, not at %s as expected: nothing landed", st.Commit, opts.Expect)
		case st.Dirty:
			return grove.LandResult{}, fail(grove.Conflict, op, h.name, "the head has work not checkpointed since %s: nothing landed", opts.Expect)
		}
	} else if !d.DryRun {
		var cpo *CheckpointOptions
		if opts != nil {
			cpo = &opts.Checkpoint
		}
		dcp, err := driverCheckpoint(op, cpo, "grove: checkpoint before landing")
		if err != nil {
			return grove.LandResult{}, wrap(op, h.name, err)
		}
		dcp.Scan = true
		cp, err := h.h.Checkpoint(ctx, dcp)
		if err != nil {
			return grove.LandResult{}, wrap(op, h.name, err)
		}
		if cp.New {
			taken = &cp
		}
	}
	res, err := l.Land(ctx, d)
	res.Checkpoint = taken
	return res, wrap(op, h.name, err)
}

// Patch returns the commits from..to (merges left out) as a patch series
// in git format-patch's mbox format, which git am applies on from, or
// with opts.Squash as one patch of the whole change (authored by
// DefaultAuthor, its message made as Land's). Empty from means the head's
// base (the commit it was created from), empty to its branch's tip (the
// checkpoint the head is at); uncommitted work is not in it. Unlike Land,
// it does not follow a branch that moved on: apply it where from is. A backend that cannot
// answers Unimplemented. opts may be nil.
func (h *Head) Patch(ctx context.Context, from, to grove.Rev, opts *PatchOptions) ([]byte, error) {
	const op = "patch"
	l, ok := h.h.(backend.Lander)
	if !ok {
		return nil, fail(grove.Unimplemented, op, h.name, "this backend cannot make patches")
	}
	unlock, err := h.begin(ctx, op, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	d := &backend.PatchOptions{}
	if opts != nil {
		d.Squash = opts.Squash
	}
	out, err := l.Patch(ctx, from, to, d)
	return out, wrap(op, h.name, err)
}
