package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/canon"
	"github.com/groveworks/grove/internal/sandbox"
	"github.com/groveworks/grove/workspace"
)

// Options configure an Engine.
type Options struct {
	// Path is the SQLite database file, created if absent; or a
	// postgres:// (or postgresql://) URL, for a PostgreSQL database that
	// a fleet of hosts shares: grove keeps its tables in the schema
	// "grove", which it creates (the role needs the right to), and each
	// engine uses up to five connections. The PostgreSQL store needs no
	// cgo.
	Path string
	// Backends are the backends sessions may be bound through, by ID; two
	// with one ID are an error.
	Backends []workspace.Backend
	// Placement is where sessions that name none get their head; zero
	// means every session must name one (or be Headless).
	Placement Placement
	// Snapshot is the snapshot policy of sessions that name none.
	Snapshot SnapshotPolicy
	// LeaseDir holds the sessions' lease files; empty means Path+".leases".
	// With PostgreSQL, leases are advisory locks and LeaseDir holds only
	// this host's own lock files (those of roots' compare-and-set
	// writes); empty means a directory under os.UserCacheDir.
	LeaseDir string
	// LeaseTimeout is, with PostgreSQL, how long a host that stops
	// answering (paused, or cut off from the server) keeps its sessions'
	// leases: the server ends its lease connection once it has been idle
	// that long, and other hosts may then take the sessions over (a host
	// that comes back is fenced: see Session.Generation). A live host
	// checks its connection every quarter of it. Zero means
	// DefaultLeaseTimeout; less than a second is InvalidArgument. SQLite's
	// leases are kernel file locks, held until their process ends.
	LeaseTimeout time.Duration
	// Sandbox is where every command on the engine's heads' content
	// runs (workspace.OpenOptions.Sandbox): the workspaces' hooks and the
	// sessions' commands (workspace.Head.Run, the run tool); a resume may
	// name its own (ResumeOptions.Sandbox). Nil runs them on the host, and
	// then no fork a session's agent asks for (ForkOptions.ByAgent) runs a
	// Setup hook: it is PermissionDenied.
	Sandbox *grove.Sandbox
	// Services gives every head of the engine's workspaces its ports, its
	// names and their variables (workspace.OpenOptions.Services); a
	// session's extensions get them (Env.Vars). Nil gives none.
	Services *workspace.Services
	// WatchChanges has every head a session holds watched for changes
	// while the session is open (workspace.OpenOptions.WatchChanges): its
	// whole checkpoints, a turn's end among them, and its statuses look
	// at what changed instead of every file, with a full scan's results.
	WatchChanges bool
}

// Engine binds sessions to heads durably and resumes them after a
// restart. It is safe for concurrent use.
type Engine struct {
	st        store
	path      string
	leaseDir  string
	backends  []workspace.Backend
	byID      map[grove.ID]workspace.Backend
	placement Placement
	snapshot  SnapshotPolicy
	sandbox   *grove.Sandbox // nil: the host
	services  *workspace.Services
	watch     bool // Options.WatchChanges

	mu       sync.Mutex
	closed   bool
	starting sync.WaitGroup // NewSession, Resume and Fork calls in flight
	sessions map[*Session]struct{}
}

// Open opens the engine's database (creating it and applying the schema's
// migrations as needed) and checks its options: a duplicate backend ID or
// a nil entry in Backends is InvalidArgument, an invalid placement a
// *PlacementError, an impossible snapshot policy a *SnapshotPolicyError,
// a database that is not SQLite, is malformed or has a newer schema, or a
// PostgreSQL server that cannot be reached or refuses the login, a
// *StoreError; a postgres:// URL pgx cannot parse is InvalidArgument.
// Each of these answers grove.CodeOf (see their types).
func Open(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Path == "" {
		return nil, errorf(grove.InvalidArgument, "open", "no database path")
	}
	if opts.LeaseTimeout != 0 && opts.LeaseTimeout < time.Second {
		return nil, errorf(grove.InvalidArgument, "open", "a lease timeout of %v: at least a second", opts.LeaseTimeout)
	}
	e := &Engine{leaseDir: opts.LeaseDir, byID: map[grove.ID]workspace.Backend{}, sessions: map[*Session]struct{}{}, services: opts.Services, watch: opts.WatchChanges}
	if opts.Sandbox != nil {
		if err := sandbox.Check(opts.Sandbox); err != nil {
			return nil, err
		}
		sb := *opts.Sandbox
		e.sandbox = &sb
	}
	pg := isPostgresURL(opts.Path)
	var err error
	if pg {
		if e.leaseDir == "" {
			e.leaseDir = defaultLocalDir(opts.Path)
		}
	} else {
		if e.path, err = filepath.Abs(opts.Path); err != nil {
			return nil, errorf(grove.InvalidArgument, "open", "database path: %w", err)
		}
		if e.leaseDir == "" {
			e.leaseDir = e.path + ".leases"
		}
	}
	if e.leaseDir, err = filepath.Abs(e.leaseDir); err != nil {
		return nil, errorf(grove.InvalidArgument, "open", "lease directory: %w", err)
	}
	for i, b := range opts.Backends {
		if b == nil {
			return nil, errorf(grove.InvalidArgument, "open", "Options.Backends[%d] is nil", i)
		}
		if _, dup := e.byID[b.ID()]; dup {
			return nil, errorf(grove.InvalidArgument, "open", "two backends with ID %q", b.ID())
		}
		e.byID[b.ID()] = b
		e.backends = append(e.backends, b)
	}
	if !opts.Placement.IsZero() {
		if e.placement, err = opts.Placement.validate(); err != nil {
			return nil, err
		}
		if err := e.register(e.placement.backend()); err != nil {
			return nil, err
		}
		if ps := e.placement.PerSession; ps != nil && ps.HeadsDir != "" {
			if err := e.checkOverlap(ps.HeadsDir); err != nil {
				return nil, err
			}
		}
	}
	if e.snapshot, err = opts.Snapshot.resolve(e.placement); err != nil {
		return nil, err
	}
	if pg {
		e.st, err = openPostgresStore(ctx, opts.Path, opts.LeaseTimeout)
	} else {
		e.st, err = openSQLiteStore(ctx, e.path, e.leaseDir)
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// register adds a placement's backend to the registry unless one with its
// ID is there; another backend value with that ID is InvalidArgument.
func (e *Engine) register(b workspace.Backend) error {
	if have, ok := e.byID[b.ID()]; ok {
		if have != b {
			return errorf(grove.InvalidArgument, "open", "the placement's backend is not the registered backend %q", b.ID())
		}
		return nil
	}
	e.byID[b.ID()] = b
	e.backends = append(e.backends, b)
	return nil
}

// ownFiles are the engine's files on this host: the SQLite database (none
// for PostgreSQL) and the lease directory.
func (e *Engine) ownFiles() []string {
	if e.path == "" {
		return []string{e.leaseDir}
	}
	return []string{e.path, e.leaseDir}
}

// checkOverlap refuses a head directory that holds the engine's files.
func (e *Engine) checkOverlap(headDir string) error {
	for _, p := range e.ownFiles() {
		if canon.Within(p, headDir) {
			return &PersistenceOverlapError{Path: p, Head: headDir}
		}
	}
	return nil
}

// CheckStateOutside refuses, as InvalidArgument, a path for the engine's
// state (its SQLite database, the directory it lives in) that lies inside
// ws's main working tree or one of its heads, where a checkpoint or a
// restore would take it. Open cannot tell, knowing no repository: a
// program that keeps its state near one asks here first.
func CheckStateOutside(ctx context.Context, ws *workspace.Workspace, path string) error {
	refuse := func(what string) error {
		return &grove.Error{Code: grove.InvalidArgument, Op: "engine: open", Path: path,
			Err: fmt.Errorf("the engine's state lies inside %s, where a checkpoint or a restore would take it; keep it elsewhere", what)}
	}
	if loc := ws.Info().Locator; filepath.Base(loc) == ".git" && canon.Within(path, filepath.Dir(loc)) {
		return refuse("the repository's working tree " + filepath.Dir(loc))
	}
	heads, err := ws.Heads(ctx)
	if err != nil {
		return err
	}
	for _, hi := range heads {
		if hi.Root != "" && canon.Within(path, hi.Root) {
			return refuse(fmt.Sprintf("head %q", hi.Name))
		}
	}
	return nil
}

// As sets target through the registered backends, in order, and reports
// whether one could.
func (e *Engine) As(target any) bool {
	for _, b := range e.backends {
		if b.As(target) {
			return true
		}
	}
	return false
}

// Close closes the engine: it waits for the NewSession, Resume and Fork
// calls in flight, closes the sessions still open in this engine (each as
// Session.Close does: releasing its lease and claims, deleting nothing),
// and then the database. A second Close is FailedPrecondition. Close must
// not be called from an extension's constructor or a turn's function,
// which the engine waits for.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errorf(grove.FailedPrecondition, "close", "engine is already closed")
	}
	e.closed = true
	e.mu.Unlock()
	e.starting.Wait()
	e.mu.Lock()
	live := make([]*Session, 0, len(e.sessions))
	for s := range e.sessions {
		live = append(live, s)
	}
	e.mu.Unlock()
	var errs []error
	for _, s := range live {
		// A session another goroutine is closing is waited for; that
		// Close reports its own outcome.
		if err := s.Close(); err != nil && !errors.Is(err, errAlreadyClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.st.close())
	return errors.Join(errs...)
}

// begin starts a call that makes a session: it fails once the engine is
// closed, and Close waits for the returned function.
func (e *Engine) begin(op string) (func(), error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errorf(grove.FailedPrecondition, op, "engine is closed")
	}
	e.starting.Add(1)
	return e.starting.Done, nil
}

// validSessionID reports whether id is a session ID the engine makes.
func validSessionID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

// SessionOptions configure NewSession. The zero value (or nil) makes a
// read-write session on the engine's placement with the engine's snapshot
// policy.
type SessionOptions struct {
	// Agent names the agent, for people reading the journal.
	Agent string
	// ID is the new session's ID: empty for a random one, else a UUID
	// of the caller's choosing (such as AgentSessionID's); one that is
	// not a UUID is InvalidArgument, one a session has already
	// AlreadyExists.
	ID string
	// Placement is where the session's head comes from; zero means the
	// engine's placement.
	Placement Placement
	// Headless makes a session without a head (no placement may be set);
	// its Checkpoint and Restore answer WorkspaceNotConfigured.
	Headless bool
	// Permission is ReadWrite (the default) or ReadOnly; any other value
	// is InvalidArgument.
	Permission Permission
	// Snapshot is the session's snapshot policy; nil means the engine's
	// (for a ReadOnly session: Manual, as it never checkpoints).
	Snapshot *SnapshotPolicy
	// Config is the caller's own configuration (model, tools,
	// instructions), opaque to grove; its digest is checked on resume.
	Config []byte
	// Extensions are built for the session's environment, once its head
	// is bound.
	Extensions []Extension
	// Policy narrows what the session's FS (and the tools built on it) may
	// reach and write, in layers that only take rights away (see Policy).
	// It is part of the session's configuration: resuming with another is
	// drift. A pattern that matches nothing is InvalidArgument.
	Policy []Policy
	// Roots are extra directories mounted beside the head (see Root);
	// part of the session's configuration. A root that is invalid or
	// overlaps the head, another root or the engine's files is
	// InvalidArgument.
	Roots []Root
	// TakeOver takes an exclusive head's claim from a session that is no
	// longer live (its lease is free) instead of failing with AlreadyBound.
	TakeOver bool
	// Wait is how long an existing isolated head that another holder has
	// open for a moment (not a session's claim, which is AlreadyBound at
	// once) is waited for; see workspace.ReopenOptions.Wait.
	Wait time.Duration
}

// NewSession binds a new session to a head and persists the session, its
// binding and, for an isolated or exclusive head, its claim in one
// transaction before returning: nothing runs before the binding is
// durable. A head already claimed by another session is AlreadyBound.
// opts may be nil.
func (e *Engine) NewSession(ctx context.Context, opts *SessionOptions) (*Session, error) {
	const op = "new session"
	done, err := e.begin(op)
	if err != nil {
		return nil, err
	}
	defer done()
	if opts == nil {
		opts = &SessionOptions{}
	}
	p := opts.Placement
	switch {
	case opts.Headless && !p.IsZero():
		return nil, &PlacementError{Kind: TwoPlacements, Err: errors.New("a headless session with a placement")}
	case p.IsZero() && !opts.Headless:
		p = e.placement
	}
	if !opts.Headless {
		if p, err = p.validate(); err != nil {
			return nil, err
		}
	}
	return e.start(ctx, sessionSpec{
		agent: opts.Agent, placement: p, headless: opts.Headless, perm: opts.Permission,
		snap: opts.Snapshot, config: opts.Config, exts: opts.Extensions, takeOver: opts.TakeOver,
		policy: opts.Policy, roots: opts.Roots, wait: opts.Wait, id: opts.ID,
	})
}

// sessionSpec is what a new session is made of, from NewSession or Fork.
type sessionSpec struct {
	id        string // empty: a random one
	agent     string
	placement Placement // validated
	headless  bool
	perm      Permission
	snap      *SnapshotPolicy
	config    []byte
	exts      []Extension
	takeOver  bool
	wait      time.Duration
	policy    []Policy
	roots     []Root
	// head, when set, is the session's head, already open (a fork's),
	// and ws the workspace it was opened from; the session takes both
	// over and destroys the head if the session fails to start.
	head *workspace.Head
	ws   *workspace.Workspace
	// parent, for a fork, is the session forked from: its "forked" event
	// is journaled in the transaction that makes the new session.
	parent string
}

// start makes, persists and returns a new session as spec says. On failure
// nothing is left: no lease held, no head the session created.
func (e *Engine) start(ctx context.Context, spec sessionSpec) (*Session, error) {
	const op = "new session"
	early := func(err error) (*Session, error) {
		if spec.head != nil { // a fork's head: nothing may be left orphaned
			_, _ = spec.head.Destroy(context.WithoutCancel(ctx), &workspace.DestroyOptions{Discard: true})
		}
		if spec.ws != nil {
			_ = spec.ws.Close()
		}
		return nil, err
	}
	perm, err := spec.perm.resolve(op)
	if err != nil {
		return early(err)
	}
	pol, err := compilePolicy(spec.policy)
	if err != nil {
		return early(err)
	}
	snap, err := snapshotFor(spec.snap, e.snapshot, perm, spec.placement)
	if err != nil {
		return early(err)
	}
	id := spec.id
	switch {
	case id == "":
		id = uuid.NewString()
	case !validSessionID(id):
		return early(errorf(grove.InvalidArgument, op, "session ID %q is not a UUID", id))
	}
	lease, gen, err := e.st.lease(ctx, id, "session "+id)
	if err != nil {
		return early(err)
	}
	if spec.id != "" {
		// Under the lease: a session of this ID is made once.
		if _, _, err := e.st.load(ctx, id); err == nil {
			_ = lease()
			return early(errorf(grove.AlreadyExists, op, "a session %s exists", id))
		} else if !errors.Is(err, errNoSession) {
			_ = lease()
			return early(err)
		}
	}
	s := newSession(e, id, spec.agent, kindOf(spec.placement), perm, snap, spec.config, lease, gen)
	s.policy, s.pol = spec.policy, pol
	if spec.head != nil {
		s.head, s.ws, s.ownsHead = spec.head, spec.ws, true
	}
	fail := func(err error) (*Session, error) {
		s.release(ctx, s.ownsHead)
		return nil, err
	}
	var b workspace.Backend
	var bind grove.Binding
	if !spec.headless {
		b = spec.placement.backend()
		if err := e.register(b); err != nil {
			return fail(err)
		}
		if s.head == nil {
			if err := s.bindHead(ctx, spec); err != nil {
				return fail(err)
			}
		}
		if err := e.checkOverlap(s.head.Info().Root); err != nil {
			return fail(err)
		}
		bind = s.head.Binding()
		s.lastCheckpoint = string(s.head.Info().Base)
		if !s.ownsHead {
			// An existing head may have moved on since it was made: the
			// session starts from its commit now.
			gained, err := s.head.Commits(ctx, grove.Rev(s.lastCheckpoint))
			if err != nil {
				return fail(err)
			}
			if len(gained) > 0 {
				s.lastCheckpoint = string(gained[0])
			}
		}
	}
	if s.roots, err = e.checkRoots(spec.roots, headDirOf(s), repoOf(s)); err != nil {
		return fail(err)
	}
	rec := sessionRecord{
		id: id, agent: spec.agent, placement: spec.placement.record(),
		digest: digest(spec.placement.record(), perm, snap, backendID(b), spec.config, spec.policy, s.roots, sparseOf(s)),
		parent: spec.parent, lastCheckpoint: grove.CheckpointID(s.lastCheckpoint),
		perm: perm, snap: snap, config: spec.config, policy: spec.policy, roots: s.roots,
	}
	claim := s.kind != SharedHead && !spec.headless
	if err := e.st.create(ctx, rec, bind, claim, spec.takeOver); err != nil {
		return fail(err)
	}
	created := s.ownsHead
	s.ownsHead = false // the head is the durable session's now
	s.exts = spec.exts
	s.startLife(ctx)
	if err := s.buildExtensions(); err != nil {
		s.abandon(ctx, created)
		return nil, err
	}
	e.track(s)
	return s, nil
}

func backendID(b workspace.Backend) grove.ID {
	if b == nil {
		return ""
	}
	return b.ID()
}

func kindOf(p Placement) HeadPlacement {
	switch {
	case p.PerSession != nil:
		return PerSessionHead
	case p.Shared != nil:
		return SharedHead
	case p.Exclusive != nil:
		return ExclusiveHead
	}
	return NoHead
}

func (e *Engine) track(s *Session) {
	e.mu.Lock()
	e.sessions[s] = struct{}{}
	e.mu.Unlock()
}

func (e *Engine) untrack(s *Session) {
	e.mu.Lock()
	delete(e.sessions, s)
	e.mu.Unlock()
}

// storeFailure is the error of a failed call on the database at path: a
// Canceled *grove.Error when a context ended, otherwise a *StoreError
// whose kind SQLite's error decides (kind when it does not).
func storeFailure(path string, err error, kind StoreKind) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &grove.Error{Code: grove.Canceled, Op: "engine: store", Path: path, Err: err}
	}
	return &StoreError{Kind: storeKind(err, kind), Path: path, Err: err}
}

// ResumeOptions configure Resume. The configuration given (Permission,
// Snapshot, Config) is compared with the one the session was bound with:
// give the same values as when it was made. The zero value (or nil)
// resumes a read-write session with the engine's snapshot policy and no
// Config.
type ResumeOptions struct {
	// Permission is ReadWrite (the default) or ReadOnly; any other value
	// is InvalidArgument.
	Permission Permission
	// Snapshot is the session's snapshot policy; nil means the engine's
	// (Manual for a ReadOnly session).
	Snapshot *SnapshotPolicy
	// Config is the caller's own configuration, as given to NewSession.
	Config []byte
	// Extensions are built for the session's environment.
	Extensions []Extension
	// AllowConfigDrift resumes even if the configuration digest changed,
	// reporting it in ResumeReport.ConfigDrift.
	AllowConfigDrift bool
	// Policy and Roots are the session's, as given to NewSession.
	Policy []Policy
	Roots  []Root
	// AsRecorded resumes with the configuration the session recorded
	// when it was bound (SessionInfo's Permission, Snapshot, Config,
	// Policy and Roots) instead of the fields above, which must then be
	// zero (InvalidArgument otherwise). It is for a caller that keeps its
	// sessions' configuration in grove alone, such as the grove command.
	// A session recorded before schema version 2 has no recorded
	// configuration: it resumes as with zero values.
	AsRecorded bool
	// Recreate repairs a head whose directory was deleted by hand instead
	// of failing with HeadUnavailable (Why missing): the head is rebuilt
	// at its recorded directory from its branch's commit, with the same
	// head ID, branch and binding (workspace.ReopenOptions.Recreate), the
	// session resumes on it, and the journal records EventRecreated
	// before EventResumed.
	Recreate bool
	// Setup and Teardown are the hooks of the workspace Resume reopens
	// (workspace.ReopenOptions'): Setup runs in a rebuilt or relocated
	// head, and in the heads the session forks; Teardown runs when the
	// session destroys its head. Without them none runs, except after
	// Relocate, which then takes the placement's.
	Setup, Teardown *grove.Hook
	// Remote is the remote of the workspace Resume reopens, to which the
	// session's checkpoints are pushed from then on; nil means the
	// engine's placement's (PerSession.Remote, ExistingHead.Remote).
	Remote *grove.Remote
	// Sandbox is the sandbox of the workspace Resume reopens (where its
	// hooks and the session's commands run); nil means the engine's
	// (Options.Sandbox). A caller resuming a session of a project whose
	// configuration names a sandbox passes it here.
	Sandbox *grove.Sandbox
	// Relocate resumes a session whose head lives on another host: the
	// head is opened through the workspace of the engine's placement on
	// this host (its Root, HeadsDir, Remote, and its Setup and Teardown
	// unless the fields above give hooks) with
	// workspace.Workspace.Relocate, which rebuilds it from its last
	// pushed checkpoint — same head ID, branch and name, a new directory
	// (<heads dir>/<name>, or <name>-<first 8 of the head ID> when that is
	// taken) — when it is not in this clone, and opens it when it is. A rebuild
	// journals EventRelocated before EventResumed, stores the new binding
	// and reports how far behind the journal the pushed checkpoint was
	// (ResumeReport.Relocated, Pushed, Behind). Without it a head on
	// another host stays the HeadUnavailable it is. The engine must have
	// a placement (InvalidArgument otherwise); a placement whose
	// workspace is another one than the session's is IdentityMismatch.
	// The session's claim and lease are in the store, shared by every
	// host on a PostgreSQL store: a session live on another host is
	// SessionBusy, and nothing is fetched.
	Relocate bool
}

// ResumeReport is what Resume found, as data.
type ResumeReport struct {
	// LastCheckpoint is the last checkpoint the journal recorded (the
	// head's base before any).
	LastCheckpoint grove.CheckpointID
	// Gained lists the commits the head's branch gained since then,
	// newest first: work done behind the session's back.
	Gained []grove.CheckpointID
	// ConfigDrift is set when the configuration changed and the caller
	// allowed it.
	ConfigDrift bool
	// Recreated is set when the head's directory was gone and Resume
	// rebuilt it (ResumeOptions.Recreate).
	Recreated bool
	// Relocated is set when Resume rebuilt the head on this host from
	// what was pushed (ResumeOptions.Relocate).
	Relocated bool
	// Pushed is the commit a relocated head was rebuilt from: the last
	// one its previous host pushed, now the session's last checkpoint.
	Pushed grove.CheckpointID
	// Behind is how many checkpoints, restores and relocations the
	// journal recorded after Pushed became the session's last checkpoint
	// (work on the previous host that never reached the remote); -1 when
	// Pushed is not a commit the journal records.
	Behind int
	// Stale, after a relocation, is where the copy of the head that this
	// host had before the head moved to another host was moved aside,
	// its files as they were (work there that never reached the remote;
	// its git registration is gone, its commits are kept under
	// refs/grove-stale/<head-id>/); "" when there was none.
	Stale string
}

// Resume reopens session id exactly: it loads the stored binding, finds
// its backend, reopens the head through workspace.Reopen, compares the
// reopened binding with the stored one and the configuration digest with
// the caller's, and reports the commits the head gained since the last
// journaled checkpoint. It never walks the head's files.
//
// Resume returns exactly these errors: a *ResumeError when the session
// cannot be resumed as it was bound (its Kind says why, its code is in
// ResumeError's doc); a *StoreError when the database cannot be read or
// written (the session may be intact; a failed read writes nothing); a
// *SnapshotPolicyError for an impossible policy; InvalidArgument for an
// unknown Permission; FailedPrecondition when the engine is closed;
// Internal naming the lease file when it cannot be made; the error of an
// extension's constructor, as a *grove.Error of its code; Canceled
// when ctx ended. opts may be nil.
func (e *Engine) Resume(ctx context.Context, id string, opts *ResumeOptions) (*Session, error) {
	done, err := e.begin("resume")
	if err != nil {
		return nil, err
	}
	defer done()
	if opts == nil {
		opts = &ResumeOptions{}
	}
	r := &resumption{e: e, ctx: ctx, id: id, opts: opts}
	// Until the lease is taken, a failed step holds nothing.
	for _, step := range []func() error{r.checkOptions, r.loadRecord, r.takeLease} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	for _, step := range []func() error{r.reopenHead, r.checkConfig, r.findDrift, r.journal} {
		if err := step(); err != nil {
			r.s.release(ctx, false)
			return nil, err
		}
	}
	return r.goLive()
}

// resumption is one Resume under way: its steps, in order, share what
// they find.
type resumption struct {
	e    *Engine
	ctx  context.Context
	id   string
	opts *ResumeOptions

	perm   Permission
	rec    sessionRecord
	data   []byte // the stored binding, read under the lease
	snap   SnapshotPolicy
	config []byte
	layers []Policy
	pol    *policy
	roots  []Root

	s         *Session
	b         workspace.Backend
	recreated bool
	relocated *grove.RelocateResult
	moved     grove.Binding // the relocated head's new binding
	report    ResumeReport
}

const resumeOp = "resume"

// fail is a *ResumeError of kind.
func (r *resumption) fail(kind ResumeKind, err error) error {
	re := &ResumeError{Kind: kind, SessionID: r.id, Err: err}
	var be *grove.Error
	if kind == HeadUnavailable && errors.As(err, &be) {
		re.Why = be.Reason
	}
	return re
}

// checkOptions refuses options that contradict each other.
func (r *resumption) checkOptions() error {
	if err := grove.ContextError(r.ctx, "engine: "+resumeOp); err != nil {
		return err
	}
	o := r.opts
	switch {
	case o.AsRecorded && (o.Permission != "" || o.Snapshot != nil || o.Config != nil || o.Policy != nil || o.Roots != nil):
		return errorf(grove.InvalidArgument, resumeOp, "AsRecorded with a Permission, Snapshot, Config, Policy or Roots of the caller's")
	case o.Relocate && r.e.placement.IsZero():
		return errorf(grove.InvalidArgument, resumeOp, "Relocate needs the engine's placement: it names this host's clone of the workspace")
	case o.Relocate && o.Recreate:
		return errorf(grove.InvalidArgument, resumeOp, "Relocate and Recreate together: a relocated head is rebuilt as it is found")
	}
	var err error
	r.perm, err = o.Permission.resolve(resumeOp)
	return err
}

// loadRecord reads the session's record and settles the configuration it
// resumes with: the caller's, or (AsRecorded) the recorded one.
func (r *resumption) loadRecord() error {
	if !validSessionID(r.id) {
		return r.fail(SessionNotFound, errorf(grove.NotFound, resumeOp, "%q is not a session ID", r.id))
	}
	rec, _, err := r.e.st.load(r.ctx, r.id) // the binding is read under the lease
	if errors.Is(err, errNoSession) {
		return r.fail(SessionNotFound, errorf(grove.NotFound, resumeOp, "no session %s", r.id))
	}
	if err != nil {
		return err
	}
	r.rec = rec
	var sp Placement
	if rec.kind == SharedHead {
		sp.Shared = &ExistingHead{}
	}
	asked := r.opts.Snapshot
	r.config, r.layers, r.roots = r.opts.Config, r.opts.Policy, r.opts.Roots
	if r.opts.AsRecorded {
		r.layers, r.roots = rec.policy, rec.roots
		if r.perm, err = rec.perm.resolve(resumeOp); err != nil {
			return err
		}
		if rec.snap.Trigger != "" {
			asked = &rec.snap
		}
		r.config = rec.config
	}
	if r.snap, err = snapshotFor(asked, r.e.snapshot, r.perm, sp); err != nil {
		return err
	}
	r.pol, err = compilePolicy(r.layers)
	return err
}

// takeLease takes the session's lease (SessionBusy when a live process
// holds it) and reads, under it, what its last holder left.
func (r *resumption) takeLease() error {
	lease, gen, err := r.e.st.lease(r.ctx, r.id, "session "+r.id)
	if grove.CodeOf(err) == grove.Busy {
		return r.fail(SessionBusy, err)
	}
	if err != nil {
		return err
	}
	// The last holder may have moved the head (a relocation) after the
	// first read.
	again, data, err := r.e.st.load(r.ctx, r.id)
	if err != nil {
		_ = lease()
		return err
	}
	r.rec.lastCheckpoint, r.data = again.lastCheckpoint, data
	s := newSession(r.e, r.id, r.rec.agent, r.rec.kind, r.perm, r.snap, r.config, lease, gen)
	s.policy, s.pol = r.layers, r.pol
	s.resumed = true
	r.s = s
	return nil
}

// reopenHead reopens (or relocates, or recreates) the head the stored
// binding names, checks it is exactly that head, and claims it.
func (r *resumption) reopenHead() error {
	if r.data == nil {
		return nil // headless
	}
	e, s, o := r.e, r.s, r.opts
	bind, err := grove.DecodeBinding(r.data)
	if err != nil {
		return r.fail(BindingCorrupt, err)
	}
	var ok bool
	if r.b, ok = e.byID[bind.Backend]; !ok {
		return r.fail(BackendUnavailable, errorf(grove.BackendUnavailable, resumeOp, "no backend %q is registered", bind.Backend))
	}
	remote := o.Remote
	if remote == nil {
		if _, _, wo := e.placement.where(); wo != nil {
			remote = wo.Remote
		}
	}
	sb := e.sandbox
	if o.Sandbox != nil {
		sb = o.Sandbox
	}
	ro := &workspace.ReopenOptions{Setup: o.Setup, Teardown: o.Teardown, Remote: remote, Sandbox: sb, Services: e.services, WatchChanges: e.watch}
	h, err := r.open(bind, ro, remote)
	var be *grove.Error
	if o.Recreate && errors.As(err, &be) && be.Code == grove.NotFound && be.Reason == grove.ReasonMissing {
		ro.Recreate = true
		if h, err = workspace.Reopen(r.ctx, r.b, bind, ro); err == nil {
			r.recreated = true
		}
	}
	if err != nil {
		if grove.CodeOf(err) == grove.Canceled {
			return err
		}
		return r.fail(resumeKind(err), err)
	}
	s.head, s.ws = h, h.Workspace()
	s.setup, s.teardown, s.remote = ro.Setup, ro.Teardown, remote // after Relocate, the placement's hooks when the caller gave none
	if r.relocated != nil {
		bind = r.moved
	}
	if got := h.Binding(); !got.Equal(bind) {
		return r.fail(IdentityMismatch, errorf(grove.IdentityMismatch, resumeOp, "the reopened head's binding differs from the stored one"))
	}
	if s.kind != SharedHead {
		return r.claim(bind)
	}
	return nil
}

// open opens the head bind names: reopened where it is, or, with
// Relocate, through this host's clone (claimed first, and never a head
// the session destroyed).
func (r *resumption) open(bind grove.Binding, ro *workspace.ReopenOptions, remote *grove.Remote) (*workspace.Head, error) {
	if !r.opts.Relocate {
		return workspace.Reopen(r.ctx, r.b, bind, ro)
	}
	// A head the session destroyed is not brought back from what its
	// host had pushed before.
	gone, err := r.e.destroyed(r.ctx, r.id)
	if err != nil {
		return nil, err
	}
	if gone {
		return nil, r.fail(HeadUnavailable, &grove.Error{Code: grove.Destroyed, Op: "engine: relocate", Head: string(bind.Head),
			Err: errors.New("the session destroyed its head")})
	}
	if r.s.kind != SharedHead {
		// Claimed elsewhere: nothing is fetched or built here.
		if err := r.claim(bind); err != nil {
			return nil, err
		}
	}
	h, res, err := r.e.relocate(r.ctx, bind, ro, remote)
	if err == nil && res.Relocated {
		r.relocated, r.moved = &res, h.Binding()
	}
	return h, err
}

// claim records the session's claim on the head bind names
// (SessionBusy when another session holds it).
func (r *resumption) claim(bind grove.Binding) error {
	err := r.e.st.claim(r.ctx, r.id, bind)
	if err != nil && grove.CodeOf(err) == grove.AlreadyBound {
		return r.fail(SessionBusy, err)
	}
	return err // the store failed, or ctx ended
}

// checkConfig checks the session's roots and compares its configuration
// with what was recorded when it was bound (ConfigDrift, unless allowed).
func (r *resumption) checkConfig() error {
	r.report.LastCheckpoint = r.rec.lastCheckpoint
	var err error
	if r.s.roots, err = r.e.checkRoots(r.roots, headDirOf(r.s), repoOf(r.s)); err != nil {
		return err
	}
	if digest(r.rec.placement, r.perm, r.snap, backendID(r.b), r.config, r.layers, r.s.roots, sparseOf(r.s)) != r.rec.digest {
		if !r.opts.AllowConfigDrift {
			return r.fail(ConfigDrift, errorf(grove.FailedPrecondition, resumeOp, "the session's configuration changed since it was bound"))
		}
		r.report.ConfigDrift = true
	}
	return nil
}

// findDrift reports what the head gained since the session's last
// checkpoint (and, after a relocation, how far the pushed state is
// behind the journal).
func (r *resumption) findDrift() error {
	report := &r.report
	if r.relocated != nil {
		report.Relocated, report.Pushed, report.Stale = true, r.relocated.Commit, r.relocated.Stale
		var err error
		if report.Behind, err = r.e.behind(r.ctx, r.id, r.relocated.Commit); err != nil {
			return err
		}
	}
	report.Recreated = r.recreated
	if h := r.s.head; h != nil {
		if report.LastCheckpoint == "" {
			report.LastCheckpoint = h.Info().Base
		}
		since := report.LastCheckpoint
		if report.Behind != 0 {
			since = report.Pushed // the journal's last checkpoint never reached this host
		}
		gained, err := h.Commits(r.ctx, grove.Rev(since))
		if err != nil {
			if grove.CodeOf(err) == grove.Canceled {
				return err
			}
			return r.fail(resumeKind(err), err)
		}
		report.Gained = gained
	}
	r.s.lastCheckpoint = string(report.LastCheckpoint)
	if r.relocated != nil {
		r.s.lastCheckpoint = string(r.relocated.Commit)
	}
	r.s.report = *report
	return nil
}

// journal records the relocation or the rebuild, then the resume.
func (r *resumption) journal() error {
	e, report := r.e, r.report
	if r.relocated != nil {
		var old struct {
			Dir string `json:"dir"`
		}
		_ = json.Unmarshal(oldPayload(r.data), &old) // a binding decoded above: its payload is JSON
		info := r.s.head.Info()
		if err := e.st.rebind(r.ctx, r.id, r.moved, r.relocated.Commit, EventRelocated, RelocatedEvent{
			Head: info.ID, Dir: info.Root, From: old.Dir, Commit: r.relocated.Commit, Behind: report.Behind, Stale: r.relocated.Stale}); err != nil {
			return err
		}
	}
	if r.recreated {
		info, commit := r.s.head.Info(), report.LastCheckpoint
		if len(report.Gained) > 0 {
			commit = report.Gained[0]
		}
		if err := e.st.journal(r.ctx, r.id, EventRecreated, RecreatedEvent{Head: info.ID, Dir: info.Root, Commit: commit}); err != nil {
			return err
		}
	}
	return e.st.reopen(r.ctx, r.id, EventResumed, ResumedEvent{Gained: report.Gained, ConfigDrift: report.ConfigDrift})
}

// goLive hands the session out: its extensions built, its head watched,
// tracked by the engine.
func (r *resumption) goLive() (*Session, error) {
	s := r.s
	if err := s.restoreTurns(r.ctx); err != nil {
		s.abandon(r.ctx, false)
		return nil, err
	}
	s.exts = r.opts.Extensions
	s.startLife(r.ctx)
	if err := s.buildExtensions(); err != nil {
		s.abandon(r.ctx, false)
		return nil, err
	}
	r.e.track(s)
	return s, nil
}

// relocate opens the head bind names through the workspace of the
// engine's placement on this host, rebuilding it there from what was
// pushed when it lives elsewhere (workspace.Workspace.Relocate).
func (e *Engine) relocate(ctx context.Context, bind grove.Binding, ro *workspace.ReopenOptions, remote *grove.Remote) (*workspace.Head, grove.RelocateResult, error) {
	b, root, wo := e.placement.where()
	wo.Services, wo.WatchChanges = e.services, e.watch
	if b.ID() != bind.Backend {
		return nil, grove.RelocateResult{}, &grove.Error{Code: grove.IdentityMismatch, Op: "engine: relocate", Head: string(bind.Head), Reason: grove.ReasonBackend,
			Err: fmt.Errorf("the session's head is of backend %q; the engine's placement is %q", bind.Backend, b.ID())}
	}
	// The caller's hooks when it gave any, else the placement's: a
	// relocated head is prepared as a new head of this host's is.
	if ro.Setup != nil || ro.Teardown != nil {
		wo.Setup, wo.Teardown = ro.Setup, ro.Teardown
	} else {
		ro.Setup, ro.Teardown = wo.Setup, wo.Teardown
	}
	wo.Remote, wo.Sandbox = remote, ro.Sandbox
	ws, err := workspace.Open(ctx, b, root, wo)
	if err != nil {
		return nil, grove.RelocateResult{}, err
	}
	h, res, err := ws.Relocate(ctx, bind, ro)
	if err != nil {
		_ = ws.Close()
		return nil, res, err
	}
	return h, res, nil
}

// behind counts the checkpoints and restores session id's journal
// recorded after commit became its last checkpoint: 0 when commit is the
// last, -1 when the journal never made it the last.
func (e *Engine) behind(ctx context.Context, id string, commit grove.CheckpointID) (int, error) {
	evs, err := e.st.events(ctx, id)
	if err != nil {
		return 0, err
	}
	var lasts []grove.CheckpointID
	for _, ev := range evs {
		var p struct {
			Checkpoint grove.CheckpointID `json:"checkpoint"`
			Commit     grove.CheckpointID `json:"commit"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil {
			continue
		}
		switch {
		case ev.Kind == EventRestored || ev.Kind == EventRelocated:
			lasts = append(lasts, p.Commit)
		case p.Checkpoint != "" && ev.Kind != EventForked:
			lasts = append(lasts, p.Checkpoint)
		}
	}
	for i := len(lasts) - 1; i >= 0; i-- {
		if lasts[i] == commit {
			return len(lasts) - 1 - i, nil
		}
	}
	return -1, nil
}

// destroyed reports whether session id's journal records that it
// destroyed its head.
func (e *Engine) destroyed(ctx context.Context, id string) (bool, error) {
	evs, err := e.st.events(ctx, id)
	if err != nil {
		return false, err
	}
	for _, ev := range evs {
		if ev.Kind == EventDestroyed {
			return true, nil
		}
	}
	return false, nil
}

// oldPayload is the payload of an encoded binding, or nil.
func oldPayload(data []byte) json.RawMessage {
	b, err := grove.DecodeBinding(data)
	if err != nil {
		return nil
	}
	return b.Payload
}

// resumeKind classifies a reopen failure by its code; the code and the
// reason stay the cause's.
func resumeKind(err error) ResumeKind {
	switch grove.CodeOf(err) {
	case grove.BindingCorrupt:
		return BindingCorrupt
	case grove.IdentityMismatch:
		return IdentityMismatch
	case grove.AlreadyBound, grove.Busy:
		return SessionBusy
	case grove.BackendUnavailable:
		return BackendUnavailable
	}
	return HeadUnavailable
}
