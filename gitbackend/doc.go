// Package gitbackend is grove's Git backend: every head is a real linked
// worktree of the user's repository, which the git command line sees and
// works with.
//
// # How it drives git
//
// Every change to a working tree, an index or a ref goes through the git
// command line, through grove's hardened runner (no hooks, no fsmonitor, no
// user configuration, explicit identity; see internal/gitcmd). What an
// operation must know before it runs git is read without a process: a head's
// HEAD, its commit and tree, its newest checkpoint, a commit's metadata, a
// full object ID (go-git for objects; loose refs, then packed-refs, for
// refs), the tree an index's cache-tree records, and what a restore's
// target changes (the directories whose cache-tree differs from the
// target's loose trees). Each such reader declines what it cannot read
// exactly as git does (a SHA-256 repository, a symbolic or unusual ref
// name, a name that is not a revision ID, a packed or unreadable object),
// and git answers instead. A warm backend starts no git process to reopen
// a head, one for Status, two for a checkpoint with no change (ls-files,
// add), three for one that records a change (and write-tree), two for a
// restore (reset, clean; objects that are not loose are read through a
// long-lived git cat-file --batch, and diff-index runs as well where the
// in-process diff cannot tell); the gitbackend tests pin these counts.
//
// One departure from "git writes everything": a checkpoint's commit object
// is written in-process, byte for byte the one git commit-tree writes (an
// identity git would rewrite, or a message with a NUL byte, is left to
// commit-tree). An object is content-addressed and changes nothing by
// being written; the ref that makes it a checkpoint is still git's.
//
//   - Create registers the worktree with git worktree add --no-checkout on a
//     new branch (grove/<name>, or the next free grove/<name>-N) under the
//     short per-repository lock, then checks the files out with read-tree -u
//     under the head's own lock. When another head's index is at the new
//     head's tree (a fork's source, which has just checkpointed; a clean
//     head of the same commit), the files are first copied from that head's
//     working tree (Linux, heads of 200 files and more), as that head's
//     index lists them, while git reads the new index from the commit; a
//     copy is kept only if what was copied hashes to the blob that index
//     names at its path, with its mode (nothing of the source head is
//     taken on its word: not its stat data, not its index, no symlink is
//     followed; a path the commit lacks undoes the whole copy), the kept
//     copies' stat data goes into the index, and read-tree -u then checks
//     out whatever was not kept. When every file was kept, git diff-files
//     checks the copies against the index instead (a stat compare: a copy
//     keeps its source's modification time, so that git need not hash it
//     again as written in the index's second), and read-tree -u runs only
//     if it finds a difference. A failed create removes the
//     branch, the directory, the registration and the manifest; a create
//     killed half-way is undone by the next open of the workspace.
//   - Checkpoint stages the head into a private index seeded from the
//     head's own index (git's stat cache stays warm), writes the tree (or
//     takes the one the index's cache-tree still records when git add
//     changed no entry), commits it with the head's current commit as
//     parent, and records it in one ref transaction: the private ref
//     refs/grove/<head-id>/<seq> and, for a head on its own branch, the
//     branch advanced from the parent it read (compare-and-swap). The
//     transaction goes to the repository's long-lived git update-ref
//     --stdin, started on first use and stopped after 5 s unused or when
//     the workspace closes. The private index then becomes the head's
//     index: it is hard-linked as index.lock — git's own lock, taken with the
//     final content in place — and renamed over the index, so a concurrent
//     git command sees the old index or the new one. With an operation in
//     progress (merge, rebase, cherry-pick, revert, am, bisect), or on an
//     attached head, a checkpoint writes the private ref only.
//   - Restore refuses a target that tracks a path which is an ignored file of
//     the head with other content (Conflict, nothing changed), then, when the
//     target drops tracked files, writes the target's content first (git
//     checkout <target> -- :/), then makes the tracked files the target's
//     and removes those it lacks (git reset --hard, run with a scratch git
//     dir of grove's whose HEAD is detached, so that it moves no ref; unlike
//     read-tree --reset -u it keeps the index's cache-tree and reads only
//     the trees that differ), then removes untracked, unignored files (git clean
//     -fd, never -x; the paths ignored now are kept explicitly when a
//     .gitignore differs between the head and the target), all through a
//     private index; only then are the branch reset (through the
//     repository's update-ref process) and the index swapped in. Nothing is
//     deleted before the new content is in place, and rerunning converges.
//   - Git commands that take ref locks (git worktree add, ref
//     transactions) are not killed half-way when a context ends: a killed
//     git would leave its lock behind, holding the name. They are short;
//     the context is checked before and after.
//   - Status is git status --porcelain=v2 on a hard link of the head's
//     index that git may refresh and write (its own lock, its own file;
//     see polledIndex), or with GIT_OPTIONAL_LOCKS=0 where no link can be
//     made: polling never takes a lock a concurrent git command needs, nor
//     writes the head's index.
//
// # Background work
//
// Three kinds of work run in the background, each owned by the Backend
// (Close cancels it, waits for it, and none starts after): pushes to a
// workspace's remote, the deletion of destroyed heads' directories, and
// git gc --auto every 50th checkpoint of a head (plumbing never starts
// git's automatic collection), which runs holding none of grove's locks,
// at most one per repository at a time. (DESIGN §4 had it under the
// repository lock: on a large repository one head's checkpoint then
// stalled every other head's operations.)
//
// # Metadata and locks
//
// grove keeps its metadata under <common git dir>/grove: the workspace ID,
// one manifest per head (name, head ID, branch, directory, state; a
// destroyed head leaves a tombstone), and flock(2) lock files: the
// per-repository lock (worktree administration, ref transactions), the
// per-head lock (checkpoint, restore, destroy; its holder is recorded), the
// isolation lock an isolated head's holder keeps, and the lock around a
// head's compare-and-set writes. The kernel releases
// a dead holder's locks. An operation that has git write the head's index
// leaves a marker while it runs, so the next holder of the head lock knows
// an index.lock left behind is stale and removes it; a lock left by grove's
// own index swap is recognized as the hard link of the private index it is.
// Each linked worktree's git dir carries the head ID (grove-head-id), which
// Reopen checks.
//
// # Lifecycle
//
//   - A new head (create, fork, Recreate) gets copies of the ignored files
//     the main checkout's .worktreeinclude names (gitignore syntax; read
//     from the main checkout, never from a head; files the main checkout's
//     own .gitignore files ignore only, never what info/exclude or a
//     configured excludes file says, cloned with FICLONE where the file system can, symlinks copied
//     as symlinks, through os.Root on both sides), then OpenOptions.Setup
//     runs in it. Until both end the manifest says Creating, so a failure
//     or a crash is undone as any failed create is: no branch, directory,
//     registration or manifest is left.
//   - Teardown runs under the head lock before Destroy changes anything.
//     Destroy then marks the manifest Destroying, renames the directory
//     into .grove-trash beside it, removes the registration and writes the
//     tombstone; the files are deleted by a goroutine, and whatever a
//     process leaves (it exits or dies first) is deleted by the next
//     OpenWorkspace, which also finishes a destroy interrupted after its
//     rename. Backend.WaitDeletions waits for the deletions.
//   - Recreate rebuilds a missing head under its head lock: registration
//     with git worktree add --no-checkout on its branch (the manifest says
//     Rebuilding meanwhile, and a head in that state does not open), then
//     read-tree -u and the new-head preparation above. It writes only
//     inside the heads directory (OpenOptions.HeadsDir or the default),
//     or at the directory a caller's binding records: a manifest lies in
//     the common git dir, which an agent can write.
//   - Reconcile compares manifests, git's registrations, directories,
//     trash and lock files; its fixes follow the same rule. Retain
//     deletes private refs in one compare-and-swap transaction per head;
//     the revisions a head was restored to are recorded beside its
//     manifest (heads/<id>.restores) and always kept.
//
// # Checkpoints that travel (OpenOptions.Remote)
//
// A workspace opened with a Remote records its workspace ID on the remote
// (refs/grove/workspace, a commit whose message names it; the first clone
// to open records its own, the others adopt it, and remote.json caches
// that this clone agrees). A head's branch (as refs/grove/<head-id>/head,
// and, when it is grove/<name>, mirrored as that branch) and its
// checkpoint refs are pushed in the background when the head is
// made and after each checkpoint and restore: one atomic push of what the
// remote lacks (the remote holds the whole previous push or the whole new
// one), leased (--force-with-lease) on refs/grove/<head-id>/owner, a
// commit naming the clone that holds the head, which the head's first push
// writes and a Relocate into another clone replaces; what was pushed is
// recorded in heads/<id>.pushed. A failed push is retried with backoff
// (Options.PushAttempts), never waited for by the checkpoint; a lease lost
// to another clone's take-over marks the head lost here and its pushes
// stop. A push given up on, or cut short by the process's end, is made by
// the next checkpoint or restore of the head, or when a Backend first
// opens the workspace with the remote (OpenWorkspace, not Reopen).
// Every clone has an ID of its own (the clone file), recorded in its
// heads' manifests and bindings, so that a binding of a head in another
// clone never opens a copy this clone still has. Relocate fetches the
// head's branch and checkpoint refs, moves the objects in, sets the refs
// in one transaction and builds the head as Recreate does, under the heads
// directory; a copy of the head left here from an earlier stint is moved
// aside (<dir>.stale-<time>), its files untouched.
//
// Transfers never run in the repository: each runs in a throwaway git
// directory in the system's temporary directory whose objects are the
// repository's (objects/info/alternates) and whose configuration is
// grove's, with only the remote's own transport allowed, so that nothing
// an agent wrote in the repository's configuration (url.*.insteadOf,
// protocol.*.allow, core.gitProxy, core.sshCommand, remote.*, credential
// helpers) redirects a push or runs a command; the caller's Remote.Config
// entries come last. Fetched objects are checked (fetch.fsckObjects)
// before they are moved into the repository.
//
// # Threat model: what an agent inside a head may do
//
// The agent working in a head is untrusted. It may have a shell in the
// head: it runs git config (the repository's config, or the head's own
// config.worktree after turning on extensions.worktreeConfig), writes any
// file of the head, its .gitattributes and its .git file, makes symlinks
// and nested repositories, leaves index.lock files. Or it may have only
// the head's FS, which gives it no more. Everything it can write is hostile
// input to grove's next git command, which runs with the orchestrator's
// rights. Each class of attack is closed at its root:
//
//   - Redirection. Every git command on a head is given its git dir,
//     common dir and working tree from grove's records (GIT_DIR,
//     GIT_COMMON_DIR, GIT_WORK_TREE), never discovered from the head's
//     .git file or its git dir's commondir; a core.worktree an agent
//     configures is overridden. Before every operation that runs git on
//     the head's files, the head's directory (not a symlink), its .git
//     file, its git dir's gitdir, commondir and HEAD must be what grove
//     recorded, read as git reads them (only line ends dropped): otherwise
//     the operation is NotFound (unregistered, moved, missing) and nothing
//     runs. A manifest's git dir must be one of this repository's.
//     Destroy still removes a head whose .git file was rewritten, as long
//     as the repository registers it there, and removes a symlink in the
//     head directory's place without following it. The trash is found
//     from tombstones (entries named <head-id>.<nanoseconds> that are
//     real directories), never from a list an agent could write. Commands on the
//     repository itself run as in a bare repository. OpenWorkspace with a
//     locator inside a head (a program run there) opens the head's
//     repository as grove recorded it (Options.Anchors: records outside
//     every repository), whatever the head's .git says now; without a
//     record it reaches the real repository or fails with
//     FailedPrecondition: a repository found inside a linked worktree (a
//     nested or bare one an agent made) is refused; a .git file is
//     followed only to one of the repository's worktree entries that names
//     the .git file back, or to the git dir of a repository with a working
//     tree outside the checkout (never another checkout's .git directory,
//     nor a git dir inside another git dir); and a head in a default heads
//     directory (<repo>.grove/) whose .git was replaced by a repository is
//     recognized as the head it is. The main checkout (where the project
//     file and .worktreeinclude are read) is never asked of git, which
//     honours core.worktree and core.bare: it is the directory around a
//     git dir named .git, or the one recorded, or the checkout the
//     workspace was opened from whose .git names the git dir directly.
//   - Commands git would run. Hooks, fsmonitor, pagers, editors, askpass,
//     credential helpers, ssh, signing and signature verification,
//     external diffs and textconv are turned off on every command; every
//     filter, diff and merge driver named in any configuration file git
//     reads for the command (the repository's config, the head's
//     config.worktree, every file they include, whatever an includeIf
//     says) is overridden to nothing (GIT_CONFIG_KEY_n), whenever it
//     appeared. Each file is parsed by git itself (git config --list on
//     its content), so no spelling of git's syntax is read differently;
//     the result is cached by the files' identity and times, so a command
//     costs no extra process unless a configuration file changed. No git
//     command runs inside a nested repository (status and diff ignore
//     submodules, and gitlink entries are dropped before git add), since it
//     would read that repository's own configuration. Aliases never apply
//     to the built-in commands grove runs. A configuration that cannot be
//     read safely (an include that is a FIFO, an include relative to git's
//     installation, a file git cannot parse, more than 512 drivers) is
//     FailedPrecondition. Include paths are resolved as git resolves them
//     (by the kernel, never cleaned as text). No transport runs (no lazy
//     fetch from a promisor remote an agent configured), and a sparse
//     checkout an agent turns on is ignored.
//   - Paths. The git directory is never reachable through the FS, by any
//     path or link (the check is made on the resolved path). Head IDs read
//     from a binding or a manifest must be canonical UUIDs before they
//     become part of a path or a ref (BindingCorrupt otherwise). Paths that
//     cross to git are NUL-separated or hashed in-process, and passed
//     literally, never as patterns. Restore never writes through a symlink
//     that took a tracked directory's place: git replaces it.
//   - Never half-applied, never wedged. Every lock an operation needs is
//     taken before anything changes. A head's index.lock held by a git
//     command outside grove is waited for Options.LockWait (5 s by
//     default), then the operation is Busy naming the lock file; a restore
//     takes it before it writes a file, and once its files are written it
//     finishes the branch and index even if its context ends. A head index
//     that fails its checksum, or that git cannot read, is replaced by one
//     read from HEAD (a checkpoint captures the working tree, not the
//     index); a leftover index.lock of grove's own is recognized and
//     removed. Files grove reads from a head's git dir and from its own
//     metadata are opened without blocking and must be regular files (a
//     FIFO would block past any context); a lock file replaced by a
//     symlink, a directory or a FIFO is made again, never followed. A
//     restore, once its files are written, waits for no lock of grove's,
//     and never deletes a file that was ignored before it (the target's
//     ignore rules may not ignore it; it is in no checkpoint).
//     git worktree prune, which deletes through a symlink planted among
//     the registrations, never runs over one (and gc --auto prunes no
//     worktrees).
//   - Nothing silently dropped. A checkpoint sees every file as it is in
//     the working tree: the assume-unchanged and skip-worktree marks an
//     agent puts in its index are cleared on grove's private index (whose
//     entries grove reads as git reads them). A tracked file replaced by a
//     FIFO, a socket or a device is listed in Skipped, never a failure,
//     and the FS never opens one (InvalidArgument: it would block). A
//     nested repository's files are captured
//     as files (never as a bare gitlink, and an empty nested repository
//     never fails a checkpoint); its own git dir is not captured, as no .git
//     ever is, and git clean never removes it on restore. Names another
//     file system would take for .git (".git.", "git~1") are ordinary
//     files here and are captured (core.protectNTFS is off; git still
//     refuses them on checkout on such a file system). What a checkpoint
//     cannot hold is listed in Skipped, and Destroy without Discard refuses
//     while a new file over the size cap exists.
//   - File content. What a file's bytes are is decided by the tree's
//     attributes (ident, text, eol, working-tree-encoding, as git add and
//     checkout apply them), never by configuration a head can set:
//     core.autocrlf, core.eol, core.symlinks, core.fileMode and
//     core.ignoreCase are fixed to the Linux defaults, so restoring a
//     checkpoint and materializing it give the same bytes, modes and
//     symlinks. A file its working-tree-encoding cannot convert is
//     FailedPrecondition naming it.
//
// What stays open: a configuration file rewritten in the instant between
// grove's read of it and git's own (an agent racing grove's commands in a
// loop) could name a driver grove has not overridden — git 2.40's
// attribute source would close this, 2.39 has none; git writes the trees
// of an index crafted with a valid checksum but unsorted entries as they
// are (an agent with write access to the head's git dir can damage its own
// checkpoints, not escape); an agent that can write the common git dir can
// hold grove's repository lock and stall creates, checkpoints and
// destroys until their contexts end, or make a reflog or an object a FIFO
// that blocks git (a ref transaction or git worktree add, which are not
// interrupted half-way, for up to two minutes; any other command until
// its context ends). Temporary files of FS writes made by
// another process while a checkpoint runs may be captured and are gone at
// the next one. A create killed inside git worktree add leaves a
// registration git fsck reports until the next open of the workspace
// removes it. A Materialize destination must not lie in a directory an
// agent can write: one swapped for a symlink while git writes into it is
// followed by git (grove's own undo never follows it).
//
// # Sealed heads
//
// Where the workspace has a sandbox (OpenOptions.Sandbox), a head shows
// itself to it as a Sealer: git in the sandbox works on a private git dir
// of the head's (grove/sealed/<head-id>/git: its own HEAD, config, refs,
// index, stash; objects borrowed from the repository's read-only through
// alternates), mounted where the head's .git file points; the .git file is
// read-only there, and nothing else of the repository is shown. Before
// each sandboxed command and each checkpoint, the commits the sandbox
// added to the head's branch are brought in (sealImport: the private
// objects copied out as regular files through os.Root, packed by git, and
// indexed by git index-pack --strict; the branch moved by compare-and-swap
// from the commit the sandbox was given), and the private dir is given
// what grove did since (sealSync: the branch's commit, the head's index,
// copies of the other branches and tags, info/exclude). Setup and
// Teardown run there too. See docs/SECURITY.md.
//
// A head can also be watched (backend.Watcher; the engine watches every
// session's head): the configuration that names commands, the hooks,
// info/ and the refs outside grove's heads are recorded
// (grove/watch/<head-id>.json), changes are listed, and Reconcile reports
// them (FindingTampered) and puts them back. A push carries a head's
// branch only as grove left it (a checkpoint, a restore, an import, its
// base).
//
// # Other tools maintaining the repository
//
// Editors fetch, git maintenance and cron jobs run gc and repack, people
// run git worktree prune and repair, all while grove works. A git command
// of grove's that fails because an object, a pack or an object directory
// went from under it (a prune removing an empty object directory just as
// git writes into it) is run again up to four more times, then fails with
// Busy; a create whose new registration a concurrent git worktree prune
// took is undone and made again. A live head is never pruned: its
// directory exists. Checkpoints grove reported stay readable under git
// gc's default prune expiry (TestOperationsSurviveConcurrentMaintenance
// runs the commands in a loop beside checkpoints, restores and forks).
// What grove cannot protect against is what git itself documents as
// unsafe: git gc --prune=now (or git prune) while anything writes, which
// can delete objects a command has just written and not yet referenced.
//
// # Repository shapes
//
// Sparse checkout, partial clone and filter drivers (clean/smudge/process,
// as Git LFS installs) in the repository's configuration are refused at
// open while grove has no head in the repository, and a commit with
// submodules (.gitmodules) or Git LFS attributes (filter=lfs in the root
// .gitattributes) is refused at create, each with Unimplemented naming the
// feature. Once grove has heads, such configuration (which an agent can
// write from its head) no longer stops the workspace from opening: it is
// inert for grove's commands, and refusing would let one agent lock the
// orchestrator out of every head.
//
// # Departures and limits
//
//   - Heads default to <parent of the main worktree>/<repository>.grove/<name>
//     (<git dir>.grove for a bare repository, or one whose main worktree is
//     not known); a heads directory or head directory inside the main
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
//   - WriteFileIf compares and sets atomically against every WriteFileIf on
//     the head, in this process or another (a per-head file lock); a plain
//     WriteFile or a write by the agent's shell is not held back by it.
//   - FS writes are atomic (temporary file and rename) but not fsynced.
package gitbackend
