package backend

import "context"

// Remote is a Git remote that a workspace's checkpoints travel to, so that
// a head can be rebuilt in another clone of the project, on another host
// (Relocator). It is the caller's configuration: grove stores neither it
// nor anything in Config in a binding, a manifest or the engine's
// database.
//
// With a Remote, a workspace:
//
//   - shares one workspace ID with every clone of the project opened with
//     the same remote (the first clone to open records its ID there; the
//     others adopt it), so that a binding made in one clone names the
//     same workspace in another;
//   - when it makes a head, and after each checkpoint and restore of one
//     of its heads, pushes the head's branch and its checkpoint refs there
//     in the background, under refs/grove/<head-id>/ (the Git backend
//     mirrors a branch in its own namespace, grove/<name>, as that branch;
//     no other branch of the remote is ever pushed), retrying a failed
//     push with backoff; the
//     checkpoint neither waits for the network nor fails because of it.
//     A push succeeds only while this clone is still recorded on the
//     remote as the head's owner (its first push records it; a Relocate
//     into another clone replaces it): the pushes of a clone that lost
//     the head are refused, and it stops pushing it;
//   - records what has been pushed, per head.
//
// A process that exits soon after a checkpoint waits for its pushes first
// (gitbackend.Backend.WaitPushes); a push cut short is made by the next
// open of the workspace with the remote. A repository that borrows objects
// through objects/info/alternates does not transfer (FailedPrecondition):
// the objects it borrows could be anyone's.
type Remote struct {
	// URL is the remote: an absolute path to a repository, or a file://,
	// git://, ssh://, http:// or https:// URL, or the scp-like form
	// [user@]host:path for ssh. Other transports (ext::, fd::, a remote
	// helper's) are InvalidArgument: grove runs no command a URL names.
	URL string
	// Config is git configuration for the transfers to URL alone, as
	// "key=value" entries, applied after grove's own (so core.sshCommand
	// or credential.helper here are the caller's choice and take effect).
	// It is how a caller gives credentials (http.extraHeader, an ssh
	// command with its key); the repository's own configuration, which an
	// agent can write, is never read for a transfer. Without a
	// core.sshCommand entry, an ssh remote uses the system's ssh (with the
	// user's ssh configuration). Values appear in the git process's
	// arguments: keep secrets in files these entries name.
	Config []string
}

// RelocateResult is what Relocator.Relocate did.
type RelocateResult struct {
	// Relocated is set when the head was rebuilt in this clone; unset
	// when it already lived here and was opened as it was.
	Relocated bool
	// Commit is the commit the rebuilt head's branch and files are: the
	// branch's commit on the remote, the head's last pushed state.
	Commit CheckpointID
	// Stale, when set, is where the copy of the head that this clone had
	// before the head moved to another clone was moved aside to make
	// room: its files unchanged, no longer a registered worktree; the
	// commits this clone had of the head and the remote did not are kept
	// under refs/grove-stale/<head-id>/<time>/.
	Stale string
}

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
	Relocate(ctx context.Context, b Binding, opts *ReopenOptions) (Head, RelocateResult, error)
}
