// Package backend is grove's driver contract: the interfaces a storage
// implementation satisfies (Backend, Workspace, Head, and the optional
// Lander, Maintainer, Relocator, Sealer, Watcher) and the options drivers
// act on, already normalized. The nouns it speaks in — IDs, HeadInfo,
// Checkpoint, Status, the head's FS, the Binding that names one head
// exactly, the one error type with its closed list of codes — are package
// grove's.
//
// Users do not hold these interfaces: they hold *workspace.Workspace and
// *workspace.Head, which validate arguments, track closed state, serialize
// calls on one head, take the safety checkpoint before a restore and the
// final checkpoint before a destroy, implement Fork as a checkpoint followed
// by a create, and wrap every error once with the operation. A backend
// implements only what is particular to its storage.
//
// This package imports nothing of grove's but package grove. A backend
// implementer imports both and, in tests, backend/backendtest, whose
// RunConformanceTests checks every clause written in these doc comments
// and in package grove's.
//
// docs/MIGRATING.md says what changed for backend authors at each
// breaking step.
//
// # Errors
//
// Every error a driver returns is, or wraps, a *grove.Error with the Code
// its method's doc names.
//
// # Concurrency
//
// A Backend and a Workspace are safe for concurrent use. The methods of
// one Head that change it, and Log, Commits and Diff, are never called
// concurrently on one Head value; the workspace layer serializes them with
// a process-wide lock per head. Status, Info, Binding and the FS take no
// such lock: they may run at the same time as any other call on the head,
// and must answer from a consistent state. Heads of one workspace may be
// used in parallel.
//
// # Departures from the design sketch
//
// What only the workspace layer acts on never reaches a driver (DESIGN
// §3.1): Head.Restore takes no options and DestroyOptions holds only
// SkipTeardown (Discard and the safety and final checkpoints are package
// workspace's), RestoreResult holds only the commit the head now equals,
// and Head.Destroy returns only an error. The options users fill are
// package workspace's own types, converted in one place. The nouns DESIGN
// puts here live in package grove (DESIGN §2.1). FS.WriteFileIf returns
// only an error: on success the new digest is grove.DigestOf(data).
// Workspace.SetArchived takes an ID; users archive by name through
// workspace.Workspace.SetArchived.
package backend
