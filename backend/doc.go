// Package backend is grove's driver contract: the interface a storage
// implementation satisfies (Backend, Workspace, Head, FS), the nouns it
// speaks in, the Binding that names one head exactly, and the one error
// type with its closed list of codes.
//
// Users do not hold these interfaces: they hold *workspace.Workspace and
// *workspace.Head, which validate arguments, track closed state, serialize
// calls on one head, take the safety checkpoint before a restore and the
// final checkpoint before a destroy, implement Fork as a checkpoint followed
// by a create, and wrap every error once with the operation. A backend
// implements only what is particular to its storage.
//
// This package imports nothing else of grove's. A backend implementer
// imports it and, in tests, backend/backendtest, whose
// RunConformanceTests checks every clause written in these doc comments.
//
// # Errors
//
// Every error is, or wraps, an *Error. Its Unwrap returns both its cause and
// the sentinel of its Code, so errors.Is(err, ErrNotFound), CodeOf(err) and
// errors.As(err, &e) all work, and an error caused by a context keeps
// matching context.Canceled or context.DeadlineExceeded. Codes are a closed,
// numbered list; never compare error strings.
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
// # Bindings
//
// A Binding is versioned JSON of at most MaxBindingSize bytes with a
// deterministic encoding, pinned by a golden file in the repository's
// testdata. DecodeBinding answers anything malformed with BindingCorrupt and
// never panics.
//
// # Departures from the design sketch
//
// What only the workspace layer acts on never reaches a driver (DESIGN
// §3.1): RestoreOptions has no fields and DestroyOptions only SkipTeardown
// (Discard and the safety and final checkpoints are package workspace's),
// RestoreResult
// holds only the commit the head now equals, and Head.Destroy returns only
// an error. The options users fill are package workspace's own types,
// converted in one place. FS.WriteFileIf returns only an error: on success
// the new digest is DigestOf(data). Workspace.SetArchived takes an ID;
// users archive by name through workspace.Workspace.SetArchived.
package backend
