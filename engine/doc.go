// Package engine binds agent sessions to heads durably and resumes them
// after a restart, in exactly the same place or with a typed error.
//
//	gb := gitbackend.New(gitbackend.Options{})
//	e, _ := engine.Open(ctx, engine.Options{
//		Path:      "state/grove.db",
//		Backends:  []workspace.Backend{gb},
//		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: repo, Base: "main"}},
//	})
//	s, _ := e.NewSession(ctx, &engine.SessionOptions{Config: agentSettings})
//	id := s.ID() // the only thing a harness needs to keep
//	...
//	s, err := e.Resume(ctx, id, &engine.ResumeOptions{Config: agentSettings})
//
// # Durability
//
// The store is one SQLite file (github.com/mattn/go-sqlite3) in WAL mode
// with synchronous=FULL and a busy timeout, so several processes share it;
// or, when Options.Path is a postgres:// URL, a PostgreSQL database
// (github.com/jackc/pgx/v5) that a fleet of hosts shares, its tables in the
// schema "grove". All of the engine's SQL sits behind one internal store
// interface, one transaction per method, and both stores pass one store
// suite (sessions, bindings, claims, the journal, migrations, concurrent
// claims from many connections, leases that die with their holder). SQLite needs cgo: a binary built with
// CGO_ENABLED=0 gets a *StoreError of kind NoSQLite (Unimplemented) from
// Open.
// Its schema is built by numbered migrations (PRAGMA user_version for
// SQLite, pinned by testdata/schema.sql; the table grove.schema_version
// for PostgreSQL, whose migrations run under an advisory lock so that
// hosts starting together migrate once). NewSession writes the session, its
// binding, its claim (for an isolated or exclusive head) and its "bound"
// event in one transaction before it returns: nothing runs before the
// binding is durable. The events table is append-only (triggers refuse
// updates and deletes).
//
// # Liveness
//
// A live session holds a lease: with SQLite, a kernel file lock in the
// lease directory that dies with its process (lease files are never
// deleted: removing a lock file while another process opens it would let
// two hold it); with PostgreSQL, a session-level advisory lock held on the
// engine's own lease connection, which the server releases when that
// connection ends — when the process dies, whatever host it ran on. Resume
// of a session whose lease is held, on any host, is SessionBusy. A claim outlives its process: a dead session's claim on a
// head is released only by resuming and closing that session, or by a new
// session that asks for a take-over (SessionOptions.TakeOver); the loser's
// journal records it. Session.Detach leaves a session that way on purpose,
// for another process to resume (the grove command starts a session in one
// process and resumes it in the next). Engine.Sessions and
// Engine.SessionInfo list what the database records, including the
// configuration a session was bound with, to resume it without drift.
//
// # A fleet of hosts
//
// With a PostgreSQL store and a placement whose workspace has a Remote
// (PerSession.Remote), a session's head is pushed to the remote as it is
// made and after each checkpoint and restore, and ResumeOptions.Relocate
// resumes on this host a session whose head lives on another: the head is
// rebuilt in this host's clone from its last pushed checkpoint (same head
// ID, branch and name, a new directory), the new binding replaces the old
// one in the store, and the journal records EventRelocated with how many
// journaled checkpoints never reached the remote (ResumeReport.Behind).
// Engine.TakeOver resumes so, a few at a time, this host's share of the
// sessions no process holds (the waiting ones over the engines
// connected, Engine.Hosts), so that the survivors of a dead host share
// its sessions.
// A lease lost with a host's database connection while the host lives on
// (a server restart, a network partition, an administrator ending it, or
// a host paused past Options.LeaseTimeout, after which the server ends
// its idle connection) is fenced. Each process that takes a session's
// lease takes the session's next generation (Session.Generation), a
// fencing token; every write of a session's own record (its journal, its
// last checkpoint, its binding) checks, in the same transaction, that
// this host's connection holds the lease and that its generation is
// still the session's, and that check locks the session's row, which the
// next holder's generation waits for. A holder that lost its session
// writes nothing more (FailedPrecondition), even when its heartbeat took
// the lease back after another host held the session and let it go, and
// every event records the generation it was written under
// (Event.Generation), never decreasing. The remote refuses its pushes of
// the head once another host took the head over (each take-over moves
// the remote's owner ref, leased on the head's branch as fetched).
// Session-level advisory locks need a server connection of their own: a
// pooler in transaction or statement mode (PgBouncer's) in front of the
// server breaks them, and Open refuses it (StoreSharedConnections);
// connect directly or in session mode.
//
// # Resume
//
// Resume loads the binding, finds its backend by ID, reopens the head
// through workspace.Reopen (identity checks only, no walk of the files),
// compares the reopened binding with the stored one and the configuration
// digest (placement, permission, snapshot policy, backend ID, the caller's
// Config) with the recorded one, and reports the commits the head's branch
// gained since the last journaled checkpoint (ResumeReport.Gained). A
// session that cannot be resumed as bound is a *ResumeError whose Kind says
// which step failed and whose code (and, for HeadUnavailable, Why: the
// backend's own Reason) says what went wrong; a database the engine cannot
// read (malformed pages included) is a *StoreError, and Resume writes
// nothing to it.
//
// # Session lifetime
//
// A session's calls, its turns and its idle checkpoint run under the
// session's lifetime: Close cancels them, waits for them to return, and
// only then journals "closed", so nothing is journaled after "closed". A
// turn's end is journaled even when the caller's context was cancelled.
//
// # Agent turns
//
// An agent CLI reports its turns through hooks, each perhaps another
// process: BeginTurn opens a turn, CheckpointTurn checkpoints what a tool
// reported writing, EndTurn takes the whole checkpoint and closes it. The
// open turn and the count of turns are the journal's, so a resumed session
// goes on where the last process left it; a turn whose end never came is
// ended by the next one's beginning. AgentSessionID gives the agent's own
// session ID a grove session ID (SessionOptions.ID) to be found by.
//
// # Permission
//
// A session is ReadWrite or ReadOnly (Permission; not to be confused with
// a head's Access, isolated or shared). A ReadOnly session hands out only
// read-only views of its head (Head, FS, and the Env its extensions get:
// see workspace.Head.ReadOnly), answers its own Checkpoint, Restore, Fork,
// Archive and Destroy with PermissionDenied, and never checkpoints by
// itself.
//
// # What the agent reaches
//
// A session's Policy (layers that only narrow: read-only, allow and deny
// patterns; .git at any depth is never reachable) holds on Session.FS and
// on its extra Roots (Session.RootFS), named directories mounted beside the
// head, contained by os.Root, never checkpointed. Both are part of the
// session's configuration. Package engine/tools builds a model's tools on
// them, in one namespace (/workspace, /workspace/roots/<name>), and
// engine/tools/toolsmcp serves those tools over MCP.
//
// # Errors
//
// Every error is, or wraps, a *grove.Error. The engine's own types
// (*PlacementError, *PersistenceOverlapError, *SnapshotPolicyError,
// *StoreError, *ResumeError) carry a code: their Code method names it and
// their Unwrap returns the *grove.Error of that code wrapping the cause,
// so grove.CodeOf, errors.Is(err, grove.ErrNotFound) and errors.As
// to either the engine type or a *grove.Error all work, and an error
// caused by a context still matches context.Canceled. Placement, overlap
// and snapshot policy errors are InvalidArgument; a store's code and a
// resume's code follow their Kind, as their types say.
//
// # Departures from DESIGN §7
//
//   - Session.Fork returns the new session; its head is held through an
//     exclusive placement recorded with the new session, and handed over
//     without being closed. ForkOptions' zero fields inherit the parent's
//     agent, permission, snapshot policy, Config and extensions.
//   - Permission (read-only or read-write) is enforced at every way to the
//     head the session hands out. The path Policy of DESIGN §8 (layers of
//     read-only, allow and deny patterns, .git at any depth denied) holds
//     on Session.FS and Env.FS, where a name is checked as given and as it
//     resolves through symlinks; Head().FS() keeps only the head's own
//     rules. Extra Roots (named directories beside the head, read-only or
//     read-write, contained by os.Root, never checkpointed) are reached
//     through Session.RootFS under the same policy, at roots/<name>/ in its
//     namespace. Policy and roots are part of the session's configuration.
//   - ResumeError.Why is a grove.Reason taken from the cause; an
//     archived or destroyed head is told by the code (Archived,
//     Destroyed), not by Why.
//   - Closing the engine closes the sessions it still has open (releasing
//     their claims and leases; nothing is deleted).
//   - Archive and Destroy are also Session methods so that they are
//     journaled; doing them through the head directly is not.
package engine
