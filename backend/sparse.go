package backend

import "context"

// Sparser is implemented by a driver Head of a backend with
// Capabilities.Sparse whose set of directories can change in place. The
// workspace layer answers SetSparse with Unimplemented for a head that
// does not implement it.
type Sparser interface {
	// SetSparse makes set the head's sparse set (normalised by the
	// workspace layer; nil: the whole tree). The files the new set adds
	// are checked out; those it leaves out are removed from disk where
	// they hold what the head's index does, and left, to be captured as
	// any file outside the set, where they hold changes. The head's
	// branch, checkpoints and uncommitted work are unchanged: a file the
	// agent deleted stays deleted, and a change that would delete ignored
	// files with the directories leaving the set is FailedPrecondition.
	SetSparse(ctx context.Context, set []string) error
}
