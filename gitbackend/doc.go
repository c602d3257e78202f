// Package gitbackend is grove's Git backend: every head is a real linked
// worktree of the user's repository, which the git command line sees and
// works with.
//
// # How it drives git
//
// Every change to a working tree, an index or a ref goes through the git
// command line, through grove's hardened runner (no hooks, no fsmonitor,
// no user configuration, explicit identity; see internal/gitcmd). go-git
// only reads refs, without a process, where reopening must stay cheap.
//
//   - Create registers the worktree with git worktree add --no-checkout on a
//     new branch (grove/<name>, or the next free grove/<name>-N) under the
//     short per-repository lock, then checks the files out with read-tree -u
//     under the head's own lock. A failed create removes the branch, the
//     directory, the registration and the manifest; a create killed half-way
//     is undone by the next open of the workspace.
//   - Checkpoint stages the head into a private index seeded from the
//     head's own index (git's stat cache stays warm), writes the tree,
//     commits it with the head's current commit as parent, and records it in
//     one ref transaction: the private ref refs/grove/<head-id>/<seq> and,
//     for a head on its own branch, the branch advanced from the parent it
//     read (compare-and-swap). The private index then becomes the head's
//     index: it is hard-linked as index.lock — git's own lock, taken with the
//     final content in place — and renamed over the index, so a concurrent
//     git command sees the old index or the new one. With an operation in
//     progress (merge, rebase, cherry-pick, revert, am, bisect), or on an
//     attached head, a checkpoint writes the private ref only.
//   - Restore refuses a target that tracks a path which is an ignored file of
//     the head with other content (Conflict, nothing changed), then writes the
//     target's content (git checkout <target> -- .), then removes tracked
//     files the target lacks (read-tree --reset -u), then untracked,
//     unignored files (git clean -fd, never -x), all through a private index;
//     only then are the branch reset and the index swapped in. Nothing is
//     deleted before the new content is in place, and rerunning converges.
//   - Status is git status --porcelain=v2 with GIT_OPTIONAL_LOCKS=0: polling
//     never takes a lock a concurrent git command needs.
//
// # Metadata and locks
//
// grove keeps its metadata under <common git dir>/grove: the workspace ID,
// one manifest per head (name, head ID, branch, directory, state; a
// destroyed head leaves a tombstone), and flock(2) lock files: the
// per-repository lock (worktree administration, ref transactions, gc), the
// per-head lock (checkpoint, restore, destroy; its holder is recorded) and
// the isolation lock an isolated head's holder keeps. The kernel releases
// a dead holder's locks. An operation that has git write the head's index
// leaves a marker while it runs, so the next holder of the head lock knows
// an index.lock left behind is stale and removes it; a lock left by grove's
// own index swap is recognized as the hard link of the private index it is.
// Each linked worktree's git dir carries the head ID (grove-head-id), which
// Reopen checks.
//
// # Repository shapes
//
// Sparse checkout, partial clone and filter drivers (clean/smudge/process,
// as Git LFS installs) in the repository's configuration are refused at
// open, and a commit with submodules (.gitmodules) or Git LFS attributes
// (filter=lfs in the root .gitattributes) is refused at create, each with
// Unimplemented naming the feature.
//
// # Departures and limits
//
//   - Heads default to <parent of the main worktree>/<repository>.grove/<name>
//     (<git dir>.grove for a bare repository, or one whose main worktree git
//     does not record); a heads directory or head directory inside the main
//     worktree is InvalidArgument. A workspace returned by Reopen creates new
//     heads (forks) beside the reopened head.
//   - Irregular files (FIFOs, sockets, devices) are listed as skipped only
//     inside directories git reports as wholly untracked: git itself skips
//     them silently elsewhere, and finding them would cost a walk of the
//     whole tree. They never make a checkpoint fail or hang.
//   - Restoring a head with a rebase, am or bisect in progress is
//     FailedPrecondition; a merge, cherry-pick or revert in progress is
//     ended by the restore, as git reset --hard would.
//   - An attached head's restore writes and removes files in its working
//     tree only; its branch and index stay as they were.
//   - Status.Dirty counts every change git status reports, except new files
//     over the default size cap; for an attached head it compares with the
//     checkout's HEAD, not with grove's last private checkpoint.
//   - WriteFileIf compares and sets atomically against writers in this
//     process; across processes it is a check then a rename.
//   - FS writes are atomic (temporary file and rename) but not fsynced.
package gitbackend
