package grove

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
