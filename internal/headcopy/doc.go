// Package headcopy copies a head's files from another head's working
// tree, for a new head at a commit the other head holds (a fork, say),
// instead of checking them out of the object store again.
//
// The copy trusts nothing of the source, whose agent can write any of it:
// the source's index is only a hint of what to copy (List); trees are
// walked one directory at a time, never following a symlink or crossing
// into another file system; a file is copied from what was opened, up to
// a bound, and kept only when its content, hashed as it is copied, is the
// blob the new head's own index (read by git from the commit) names at
// its path, with its mode (Stamp). Only such copies get stat data in the
// index; the caller's checkout rewrites everything else.
//
// A copy keeps its source's modification time, as cp -p does. git cannot
// trust the stat data of a file changed in the same second as the index
// was written ("racy git"), so it hashes such a file again in every
// command until the index is written again: stamped "now", every copy
// would be one. A copy is racy only where its source changed in that
// second. A later edit of a copy changes its time, which git sees; only
// one that puts the time back by hand within the clock tick of the copy's
// own write would not be seen, as no stat check sees an edit that puts
// the time back once a checkout is a second old.
//
// A new head also gets copies of the ignored files the main checkout's
// .worktreeinclude names (Includes, Copier): an .env, local settings, a
// dependency directory, each reached through os.Root on both sides.
//
// Files copies on Linux (openat, FICLONE where the file system shares
// blocks); elsewhere Works is false and every new head is checked out.
//
// A tree no agent holds — a seed grove checked out itself — is copied
// without its content being read: Probe says what the file system
// offers (CoW), SnapshotTree clones a tree MakeTree made in one step (a
// Btrfs subvolume snapshot, APFS clonefile), CloneFiles clones its files
// one by one (FICLONE), reading back those whose stat data is not what
// the seed's index records. A seed's index stays as old as the stat data
// it holds (its file's time is when that data was true), so git's racy
// rule reads it as it reads any index, and the caller checks the copy
// against it as it checks any copy.
package headcopy
