// Package changes learns which paths of a directory tree changed, from
// the kernel's file-system notifications (Linux's inotify, through
// golang.org/x/sys/unix), so that a caller that scanned the tree once need
// only look at those paths afterwards.
//
// # Invariants
//
//   - Completeness is explicit. Changed says whether every change since a
//     Mark is among the paths it returns; it says no after anything that
//     could hide a change: the kernel's queue overflowed, a watch could
//     not be added (the per-user limit, a directory it may not read), a
//     watched directory was renamed (its watch would report its files
//     under its old name), the tree itself moved or was replaced. A caller
//     that is told no scans the tree, as it would with no watcher at all.
//   - A Mark is a barrier: every change made to the tree before Sync was
//     called (by any process) is recorded by the time Sync returns its
//     Mark. Sync makes a file of an unguessable name in a directory of the
//     watcher's own, outside the tree, reached through a descriptor (no
//     link is followed, nothing is truncated), and waits a bounded time
//     for its event: one inotify queue keeps the order in which events
//     happened.
//   - No link is followed: a directory is watched only if it is one when
//     the watch is added (IN_DONT_FOLLOW, IN_ONLYDIR).
//   - After a loss, the next Sync watches the tree afresh before it
//     returns, so that the scan the caller then makes is watched whole.
//   - A directory named .git is never entered (a nested repository's
//     administration changes at every git command run in it); its
//     creation or removal is a change of its path.
//
// # Caveats
//
// What the kernel does not report is not seen: a write through a shared
// memory mapping, a write to a file through a hard link that lives
// outside the tree, a change on a network file system made by another
// machine. A write through one name of a file with several is reported
// under that name alone: a caller that must know every name of a changed
// file looks at its link count. Only Linux is watched; elsewhere New is
// errors.ErrUnsupported and callers scan.
//
// # Concurrency
//
// A Watcher's methods may be called from several goroutines. Its one
// goroutine, which reads the kernel's queue, is owned by the Watcher:
// Close stops it and waits. A Watcher holds an inotify instance and a
// watch per directory until Close.
package changes

// Mark is a point in a Watcher's record of changes (see Watcher.Sync).
type Mark uint64
