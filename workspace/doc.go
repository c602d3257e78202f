// Package workspace is what a program using grove holds: a Workspace (one
// project, for the Git backend one repository) and its Heads, each a
// mutable copy of the project an agent works in. Checkpoints are commits,
// restores are resets, forks are new heads from a checkpoint, and a
// binding reopens exactly the same head after a restart — or fails with a
// typed error, never a different or an empty head.
//
// A program imports this package, package grove (the nouns: IDs, Rev,
// Binding, Checkpoint, Status, errors and their codes), one backend
// package (gitbackend, or memorybackend in tests) and, for durable
// sessions, engine; never package backend, which is the contract backends
// implement.
//
// # Open a workspace, make a head
//
//	ws, err := workspace.Open(ctx, gitbackend.New(gitbackend.Options{}), "path/in/repo", nil)
//	h, err := ws.NewHead("agent-1").From("main").Create(ctx)
//
// NewHead returns a builder: From (a revision; default the workspace's
// HEAD), Branch (default grove/<name>), Dir (default under
// OpenOptions.HeadsDir), Shared (many holders, compare-and-set writes;
// the default is Isolated: one holder in all processes, a second gets
// AlreadyBound) and Attach (a shared head over a checkout the user owns).
// Workspace.OpenHead opens an existing head by name, Heads lists them,
// SetArchived archives one by name, Materialize writes a revision's tree
// into a directory.
//
// # Work in a head
//
//	err = h.FS().WriteFile("main.go", code, 0o644) // paths are slash paths inside the head
//	cp, err := h.Checkpoint(ctx, nil)             // a commit of the whole tree, untracked files included
//	st, err := h.Status(ctx)                      // dirty? what changed? never waits for a writer
//	res, err := h.Restore(ctx, grove.Rev(cp.ID), nil) // dirty work kept in res.Safety
//	exp, err := h.Fork(ctx, "experiment", nil)     // a new isolated head, uncommitted work included
//	_, err = h.Destroy(ctx, nil)                  // a final checkpoint first; branch and checkpoints stay
//
// The FS refuses every path that leaves the head (PathEscape) and the
// head's .git (PermissionDenied), whatever symlinks the agent planted. Log
// lists checkpoints (newer ones survive a restore to an older one), Diff
// compares revisions or a revision with the working tree (Live), Commits
// lists what the head's branch gained behind grove's back.
//
// # Resume after a restart
//
//	saved, err := h.Binding().Encode() // persist before the agent runs
//	...
//	b, err := grove.DecodeBinding(saved)
//	h, err := workspace.Reopen(ctx, gitbackend.New(gitbackend.Options{}), b, nil)
//
// Reopen checks identity only (it never walks the files) and answers
// BindingCorrupt, NotFound with a Reason (missing, moved, unregistered,
// branch), IdentityMismatch, Destroyed, Archived or AlreadyBound — never a
// different head. Package engine builds durable sessions on this.
//
// # Lifecycle
//
// A head deleted by hand stays NotFound (missing) until asked to be
// rebuilt, in place and as the same head:
//
//	h, err := workspace.Reopen(ctx, b, saved, &workspace.ReopenOptions{Recreate: true})
//
// OpenOptions.Setup runs a command in every new head (after the Git
// backend's .worktreeinclude copies) and undoes the create if it fails;
// Teardown runs before Destroy. Workspace.Reconcile reports (and with Fix
// repairs) what drifted from grove's records; Workspace.Retain thins out
// old checkpoints by a RetentionPolicy.
//
// # Options
//
// Every options argument may be nil, which means its zero value; each zero
// field has a documented default. These are the user's options: the
// workspace layer validates and normalizes them and passes drivers only
// what drivers act on (Discard and the safety and final checkpoints are
// this layer's work).
//
// # Read-only views
//
// Head.ReadOnly returns a view of the same open head that reads as the
// head does and answers PermissionDenied to every change: checkpoint,
// restore, fork, archive, destroy, every FS write, and the writes of the
// Workspace reached from it. engine hands out such views to read-only
// sessions.
//
// # Concurrency
//
// Workspace and Head are safe for concurrent use. Calls on one head are
// serialized process-wide and give up when their context ends; Status,
// Info, Binding and the FS's reads never wait for them. Closing never
// deletes anything; only Destroy does.
//
// # Errors
//
// Every error is, or wraps, a *grove.Error with a grove.Code from a closed
// list. Match with grove.CodeOf(err), errors.Is(err, grove.ErrNotFound)
// and friends, or errors.As(err, &e) for its Op, Head, Path, Rev and
// Reason. An error
// reads like an fs.PathError, each field once and labelled:
//
//	workspace: create head "x" revision "nope": not found: does not name a commit
//
// The data nouns (IDs, HeadInfo, Checkpoint, Status, Diff, Binding, Error,
// Code, FS, ...) are package grove's, defined once and shared with the
// drivers, so values pass between the layers unconverted. Backend here is
// backend.Backend as a program names it.
package workspace
