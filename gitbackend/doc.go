// Package gitbackend is grove's Git backend: every head is a real linked
// worktree of the user's repository, which the git command line sees and
// works with. docs/GITBACKEND.md says how each invariant below is kept;
// docs/SECURITY.md is the threat model.
//
// # Invariants
//
//   - Every change to a working tree, an index or a ref goes through the
//     git command line, through grove's hardened runner (internal/gitcmd:
//     no hook, fsmonitor, filter, driver, pager, helper or user
//     configuration runs; every command is told its git dir and work
//     tree). The one object grove writes itself is a checkpoint's commit,
//     byte for byte the one git commit-tree writes; refs are always git's.
//     What grove reads without a process (refs, loose objects, an index's
//     cache-tree) it declines where it cannot read exactly as git does, and
//     git answers instead.
//   - A checkpoint is a commit of the whole tree, recorded in one ref
//     transaction: the private ref refs/grove/<head-id>/<seq> and, for a
//     head on its own branch, the branch advanced by compare-and-swap from
//     the parent it read. The head's index is swapped in with git's own
//     lock, so a concurrent git command sees the old index or the new one.
//   - A restore deletes nothing before the target's content is in place,
//     never deletes an ignored file, moves the branch only after the files,
//     and converges when run again. A create or destroy killed half-way is
//     finished or undone by the next open of the workspace; a ref
//     transaction is never cut short by grove's death (gitcmd.Cmd.Finish).
//   - Nothing in a head is taken on its word: not its index, its stat
//     data, its .git file, its manifests, symlinks or the configuration an
//     agent wrote. Files copied from a head are hashed against the commit;
//     grove's trust anchors (the main checkout, the project file) are
//     found from records outside the shared git dir.
//   - Metadata lives under <common git dir>/grove: the workspace ID, one
//     manifest per live head (tombstones of destroyed heads apart, so that
//     every operation costs what live heads cost), and flock(2) lock files
//     the kernel releases when their holder dies.
//   - Background work — pushes to the workspace's remote, the deletion of
//     destroyed heads' directories, git gc --auto every 50th checkpoint or
//     relocation in a repository — is owned by the Backend: it runs holding none of grove's
//     locks, Close cancels it and waits for it, and none starts after.
//
// # Rooms
//
// The package is the core (a head is a linked worktree: create, open,
// checkpoint, restore, status, destroy, repairs and relocation); the rest
// lives beside it: git's files read in-process (internal/gitfmt), the
// repository as grove drives it (internal/gitrepo), the head registry
// (internal/registry), the confined FS (internal/rootfs), transfers to a
// remote (internal/transport), copying heads (internal/headcopy), landing
// (internal/land), sealed heads and the watch (internal/seal), includes,
// retention and deletion (internal/lifecycle), locator checks
// (internal/locate), trust anchors (internal/anchors), owned background
// work (internal/tasks) and what changed in a watched head
// (internal/changes).
//
// # Watched heads
//
// With OpenOptions.WatchChanges, an open head learns from a watcher
// which of its paths changed (watched.go). A whole checkpoint then looks
// at those paths alone, or at nothing when none changed, and Status gives
// its last answer again while nothing changed — but only where what the
// last full look vouched for still holds: no event lost, the head's
// commit and index file as that look left them, info/exclude and
// info/attributes with the same content, no operation in progress, no
// ignore, attributes or modules file or .git among the changes, no
// changed file with other names. Anything else scans whole, so the results
// are a full scan's; sealed, sparse and attached heads and heads with
// submodules always scan, and so do the checkpoints the workspace layer
// takes before a restore, a fork, a destroy or a land
// (CheckpointOptions.Scan). The watcher cannot see writes through a
// shared mapping or through a hard link whose name lies outside the head,
// nor an index an agent rewrote in place with its size and time put back:
// such a change reaches a checkpoint at the next full look.
//
// A watched head also keeps in memory the index its last narrowed
// checkpoint wrote, with the hash states that reseal it from an edit on,
// while the index file is that one (inode, size, modification time): the
// next narrowed checkpoint neither reads nor checks it again, and writes
// over the file the last one replaced (grove-index-spare, held open, and
// written only while it has no other name and no one else has it open).
//
// # Sealed heads
//
// Where the workspace has a sandbox (OpenOptions.Sandbox), a head is a
// Sealer: git in the sandbox works on a private git dir of the head's
// (grove/sealed/<head-id>/git), the shared repository is read-only there,
// and the commits the sandbox made are imported (index-pack --strict, the
// branch moved by compare-and-swap) before each checkpoint. Where it has
// none, a head can be watched (a Watcher): changes to the configuration
// that names commands, hooks, info/ and foreign refs are reported and
// Reconcile puts them back.
//
// # Sparse heads
//
// A sparse head's set is its manifest's, never read back from the head:
// git reads it from a private git dir made for the one command that
// checks files out (create, recreate, restore, SetSparse). Before every
// checkpoint, Status and restore, the index's skip-worktree marks are made
// the set's (sparse.go): a file on disk is looked at, one outside the set
// that is not on disk is kept unless the agent put it there and removed it
// (SparseBase tells), a file in the way of a directory outside the set is
// skipped. Sparse heads are Unimplemented under a sandbox.
//
// # Partial clones
//
// grove's git never fetches. Before an operation reads objects, the ones
// it needs and the clone lacks are found in-process (gitfmt.Store.Has)
// and fetched in one request, in a transfer directory, from the remote
// Options.Promisor returns (promisor.go) — never from the repository's
// own remote configuration, which an agent can write.
//
// # Departures and limits
//
//   - Heads default to <parent of the main worktree>/<repository>.grove/<name>
//     (<git dir>.grove for a bare repository, or one whose main worktree is
//     not known); a heads directory or head directory inside the main
//     worktree is InvalidArgument. A workspace returned by Reopen creates new
//     heads (forks) beside the reopened head.
//   - Git LFS works without git-lfs: no filter of any configuration runs,
//     grove reads pointers and the common dir's lfs/objects in-process
//     (lfs.go, package lfs) and writes the stat data of the LFS files it
//     materializes or stores into the index in place (git with git-lfs
//     would leave the same). LFS files are captured whatever their size;
//     content the store lacks is left as the pointer (Status.LFSMissing)
//     until FetchLFS gets it from the caller's remote alone; lfs.storage,
//     lfs.url and .lfsconfig are not read. Filter drivers other than filter.lfs.* are refused at open
//     while grove has no head in the repository (Unimplemented).
//   - A head's submodules are checked out, recursively, as linked
//     worktrees of the repository's own submodule repositories
//     (<common>/modules/<name>), at the commits its index records;
//     nothing is cloned or fetched, and a commit the store lacks is
//     NotFound with a *grove.SubmoduleError. A checkpoint commits work
//     inside them in their repositories first (submodule.go).
//     HeadBuilder.NoSubmodules, attached heads and sealed workspaces
//     leave them empty, as git worktree add does; checkpoints then keep
//     their gitlinks while they stay empty and capture what an agent
//     puts there as files (see GITBACKEND.md).
//   - Irregular files (FIFOs, sockets, devices) are listed as skipped only
//     inside directories git reports as wholly untracked: git itself skips
//     them silently elsewhere. They never make a checkpoint fail or hang.
//   - Restoring a head with a rebase, am or bisect in progress is
//     FailedPrecondition; a merge, cherry-pick or revert in progress is
//     ended by the restore, as git reset --hard would.
//   - An attached head's restore writes and removes files in its working
//     tree only; its branch and index stay as they were.
//   - Status.Dirty counts every change git status reports, except new files
//     over the default size cap; for an attached head it compares with the
//     checkout's HEAD, not with grove's last private checkpoint.
//   - WriteFileIf compares and sets atomically against every WriteFileIf on
//     the head, in this process or another (a per-head file lock); a plain
//     WriteFile or a write by the agent's shell is not held back by it.
//   - FS writes are atomic (temporary file and rename) but not fsynced.
//   - git gc --prune=now (or git prune) while anything writes can delete
//     objects a command has just written, as git documents; everything else
//     other tools run beside grove (fetch, gc, repack, worktree prune) is
//     survived.
package gitbackend
