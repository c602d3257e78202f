package backend

import (
	"context"

	"github.com/groveworks/grove"
)

// Relocator is implemented by a Workspace opened with a Remote whose
// heads can be rebuilt in another clone of the workspace.
type Relocator interface {
	// Relocate opens here the head b names. A head that lives in this
	// clone opens as Reopen opens it. A head that lives in another clone
	// (on another host) is rebuilt here from what was pushed: its branch
	// and checkpoint refs are fetched from the remote, and the head is
	// made under this workspace's heads directory from the branch's
	// pushed commit, with the same head ID, name, branch and access, and
	// a new binding (Head.Binding) that records where it now is; Setup
	// runs in it as after a create. The other clone's copy is not
	// touched.
	//
	// Errors: a binding of another workspace is IdentityMismatch
	// (ReasonWorkspaceID), of another backend IdentityMismatch
	// (ReasonBackend); a malformed one BindingCorrupt; a workspace opened
	// without a Remote FailedPrecondition; a head the remote holds
	// nothing of NotFound (ReasonMissing); a remote that cannot be
	// reached Unavailable; another head of this clone with the head's
	// name, or a branch of the head's name that is not the head's,
	// AlreadyExists; an earlier copy of the head in this clone that is
	// still held open AlreadyBound; another clone taking the head over at
	// the same moment Conflict. A head that lives here fails as Reopen
	// does (Destroyed, NotFound, ...).
	Relocate(ctx context.Context, b grove.Binding, opts *ReopenOptions) (Head, grove.RelocateResult, error)
}
