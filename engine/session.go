package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/internal/rootfs"
	"github.com/groveworks/grove/workspace"
)

// Session is one agent's session, bound to one head (or none). Its methods
// are safe for concurrent use.
//
// A session has a lifetime: from NewSession, Resume or Fork to Close (or
// Destroy, which closes it). Close cancels what runs on the session's
// behalf (an idle checkpoint, the context of a running turn, the calls in
// progress) and waits for it to return, then journals "closed": nothing is
// ever journaled for the session after "closed" until it is resumed.
type Session struct {
	e      *Engine
	id     string
	agent  string
	kind   HeadPlacement
	perm   Permission
	snap   SnapshotPolicy
	config []byte
	lease  func() error // releases the session's lease
	gen    int64        // the generation taken with the lease
	policy []Policy     // as given
	pol    *policy      // compiled
	roots  []Root       // canonical
	rootFS map[string]*rootfs.FS

	ws       *workspace.Workspace // the workspace the session opened, if any
	head     *workspace.Head      // the session's handle, used for its own calls
	view     *workspace.Head      // what callers get: head, or for ReadOnly its read-only view
	ownsHead bool                 // a failed start destroys head (one it created, or a fork's)

	setup, teardown *grove.Hook   // the workspace's hooks, for the heads the session forks
	remote          *grove.Remote // the workspace's remote, for them too

	resumed    bool
	report     ResumeReport
	exts       []Extension
	built      map[reflect.Type]any
	builtOrder []any // the built extensions, in the order given

	life     context.Context // ends when Close begins
	end      context.CancelFunc
	wg       sync.WaitGroup // calls, turns and idle checkpoints in flight
	closedCh chan struct{}  // closed when Close has finished

	// auto is held by a turn and by an idle checkpoint while they run, so
	// the two never overlap.
	auto sync.Mutex

	mu             sync.Mutex
	turn           bool
	turns          int              // turns journaled, this process's and earlier ones'
	open           TurnStartedEvent // the turn BeginTurn opened, until EndTurn (Turn 0: none)
	idleOps        int              // restores and destroys in flight: no turn starts meanwhile
	watching       bool             // the head's watch is the session's (see startLife)
	reported       map[string]bool  // the watch's changes already journaled
	closed         bool
	idle           *time.Timer
	idleGen        int // which idle timer is current
	lastCheckpoint string
}

// errAlreadyClosed is the cause of a second Close's FailedPrecondition.
var errAlreadyClosed = errors.New("already closed")

func newSession(e *Engine, id, agent string, kind HeadPlacement, perm Permission, snap SnapshotPolicy, config []byte, lease func() error, gen int64) *Session {
	s := &Session{e: e, id: id, agent: agent, kind: kind, perm: perm, snap: snap, config: bytes.Clone(config), lease: lease, gen: gen, closedCh: make(chan struct{})}
	s.life, s.end = context.WithCancel(context.Background())
	return s
}

// startLife hands the session's head out under its permission and starts
// watching the repository its agent could plant commands in (see
// workspace.Head.Watch; a backend that cannot watch is not); the session
// is then live.
func (s *Session) startLife(ctx context.Context) {
	s.view = s.head
	if s.head != nil && s.perm == ReadOnly {
		s.view = s.head.ReadOnly()
	}
	if s.head != nil && s.perm == ReadWrite {
		s.watching = s.head.Watch(ctx) == nil
	}
}

// journalTampering journals, once each, what the head's watch saw change
// since the session started (EventTampered); ending the watch with it at
// Close. A watch that cannot be read journals nothing.
func (s *Session) journalTampering(ctx context.Context, end bool) {
	if !s.watching {
		return
	}
	var changes []grove.Tamper
	var err error
	if end {
		changes, err = s.head.EndWatch(ctx)
	} else {
		changes, err = s.head.Tampered(ctx)
	}
	if err != nil {
		return
	}
	var fresh []grove.Tamper
	s.mu.Lock()
	for _, c := range changes {
		k := c.Kind + "\x00" + c.Name + "\x00" + c.Now
		if !s.reported[k] {
			if s.reported == nil {
				s.reported = map[string]bool{}
			}
			s.reported[k] = true
			fresh = append(fresh, c)
		}
	}
	s.mu.Unlock()
	if len(fresh) > 0 {
		_ = s.e.st.journal(ctx, s.id, EventTampered, TamperedEvent{Changes: fresh})
	}
}

// ID returns the session's ID (a UUID), the key Resume takes.
func (s *Session) ID() string { return s.id }

// Generation is the session's fencing token: how many times a process
// took the session's lease, this one included. Every later holder has a
// greater one, and the store refuses this session's writes (with
// FailedPrecondition) once another holder took it, even if that one let
// it go again. A caller whose own systems act for the session can carry
// it to refuse a stale holder's actions the same way.
func (s *Session) Generation() int64 { return s.gen }

// Permission returns what the session may do to its head.
func (s *Session) Permission() Permission { return s.perm }

// Head returns the session's head under the session's permission (for a
// ReadOnly session, a read-only view: see workspace.Head.ReadOnly), or
// nil for a headless session. Changes made through it directly are not
// journaled; use the Session's methods for that. The session owns the
// head: closing it (or its Workspace) is closing it under the session,
// whose later calls then fail.
func (s *Session) Head() *workspace.Head { return s.view }

// Resumed returns what Resume found; the zero value for a new session.
func (s *Session) Resumed() ResumeReport { return s.report }

// FS returns the head's file system under the session's permission and
// policy: writes through a ReadOnly session, and whatever the policy
// refuses, are PermissionDenied; the git directory (.git, at any depth, in
// any case) is never reachable. It is nil for a headless session. (The
// head's own FS, Head().FS(), has only the head's rules.)
func (s *Session) FS() grove.FS {
	if s.view == nil {
		return nil
	}
	return &policyFS{fs: s.view.FS(), pol: s.pol}
}

// Writable reports whether the session may change its head's files at
// all: a ReadWrite session whose policy has no read-only layer.
func (s *Session) Writable() bool { return s.perm == ReadWrite && !s.pol.readOnly() }

// Reachable reports whether the session's policy lets a caller read the
// head's path name (an io/fs name), judged by its name alone: nil, or the
// PermissionDenied error saying which rule refuses it. Tools that show
// paths and content from git (a status, a diff) filter with it.
func (s *Session) Reachable(name string, isDir bool) error {
	return s.pol.check("reach", name, isDir, false)
}

// Policy returns the session's policy layers, as given.
func (s *Session) Policy() []Policy { return slices.Clone(s.policy) }

// bindHead opens or creates the head spec's placement names. An existing
// head another session claims is AlreadyBound, naming that session,
// unless spec takes it over.
func (s *Session) bindHead(ctx context.Context, spec sessionSpec) error {
	p := spec.placement
	var err error
	switch {
	case p.PerSession != nil:
		ps := p.PerSession
		s.setup, s.teardown, s.remote = ps.Setup, ps.Teardown, ps.Remote
		if s.ws, err = workspace.Open(ctx, ps.Backend, ps.Root, &workspace.OpenOptions{HeadsDir: ps.HeadsDir, Setup: ps.Setup, Teardown: ps.Teardown, Remote: ps.Remote, Sandbox: s.e.sandbox, Services: s.e.services, WatchChanges: s.e.watch}); err != nil {
			return err
		}
		b := s.ws.NewHead("session-" + s.id).Isolated()
		if ps.Base != "" {
			b = b.From(ps.Base)
		}
		if s.head, err = b.Create(ctx); err == nil {
			s.ownsHead = true
		}
		return err
	default:
		eh, shared := p.Exclusive, false
		if p.Shared != nil {
			eh, shared = p.Shared, true
		}
		s.setup, s.teardown, s.remote = eh.Setup, eh.Teardown, eh.Remote
		if s.ws, err = workspace.Open(ctx, eh.Backend, eh.Root, &workspace.OpenOptions{Setup: eh.Setup, Teardown: eh.Teardown, Remote: eh.Remote, Sandbox: s.e.sandbox, Services: s.e.services, WatchChanges: s.e.watch}); err != nil {
			return err
		}
		if !shared && !spec.takeOver {
			holder, claimed, err := s.e.Claimant(ctx, eh.Root, eh.Head)
			if err != nil {
				return err
			}
			if claimed {
				return &grove.Error{Code: grove.AlreadyBound, Op: "engine: new session", Head: eh.Head,
					Err: &ClaimedError{Holder: holder}}
			}
		}
		if s.head, err = s.ws.OpenHead(ctx, eh.Head, &workspace.ReopenOptions{Wait: spec.wait}); err != nil {
			return err
		}
		if shared && s.head.Info().Access != grove.Shared {
			return errorf(grove.InvalidArgument, "new session", "head %q is %s; a shared placement needs a shared head", eh.Head, s.head.Info().Access)
		}
		return nil
	}
}

// release undoes a session that failed to start or closes one: the head
// handle, the workspace the session opened and the lease. destroy removes
// the head (one the session created).
func (s *Session) release(ctx context.Context, destroy bool) {
	if s.head != nil {
		if destroy {
			_, _ = s.head.Destroy(context.WithoutCancel(ctx), &workspace.DestroyOptions{Discard: true})
		} else {
			_ = s.head.Close()
		}
	}
	if s.ws != nil {
		_ = s.ws.Close()
	}
	s.mu.Lock()
	for _, r := range s.rootFS {
		r.Close()
	}
	s.rootFS = nil
	s.mu.Unlock()
	if s.lease != nil {
		_ = s.lease()
	}
}

// Checkpoint checkpoints the head and journals it. A headless session
// answers WorkspaceNotConfigured and journals nothing; a ReadOnly one
// PermissionDenied.
func (s *Session) Checkpoint(ctx context.Context, opts *workspace.CheckpointOptions) (grove.CheckpointResult, error) {
	ctx, done, err := s.enter(ctx, "checkpoint", true, true)
	if err != nil {
		return grove.CheckpointResult{}, err
	}
	defer done()
	cp, err := s.head.Checkpoint(ctx, opts)
	if err != nil {
		return cp, err
	}
	var paths []string
	if opts != nil {
		paths = opts.Paths
	}
	return cp, s.recordCheckpoint(ctx, cp, EventCheckpointed, paths...)
}

// recordCheckpoint journals a checkpoint (narrowed to paths, if any),
// with the turn open then, and makes it the session's last.
func (s *Session) recordCheckpoint(ctx context.Context, cp grove.CheckpointResult, kind EventKind, paths ...string) error {
	s.mu.Lock()
	turn := s.open.Turn
	s.mu.Unlock()
	err := s.e.st.setLast(ctx, s.id, cp.ID, kind, CheckpointedEvent{Checkpoint: cp.ID, New: cp.New, Skipped: len(cp.Skipped), Turn: turn, Paths: paths})
	if err == nil {
		s.mu.Lock()
		s.lastCheckpoint = string(cp.ID)
		s.mu.Unlock()
	}
	return err
}

// Restore restores the head (with its safety checkpoint) and journals it.
// A restore rewrites the head's files whatever the session's path policy
// allows, so a session whose policy is read-only answers PermissionDenied.
// It is an idle-time operation: while a turn runs it is FailedPrecondition.
// A ReadOnly session answers PermissionDenied.
func (s *Session) Restore(ctx context.Context, to grove.Rev, opts *workspace.RestoreOptions) (workspace.RestoreResult, error) {
	ctx, done, err := s.enter(ctx, "restore", true, true)
	if err != nil {
		return workspace.RestoreResult{}, err
	}
	defer done()
	end, err := s.idleOp("restore")
	if err != nil {
		return workspace.RestoreResult{}, err
	}
	defer end()
	if s.pol.readOnly() {
		return workspace.RestoreResult{}, errorf(grove.PermissionDenied, "restore", "the session's policy is read-only: a restore rewrites files")
	}
	res, err := s.head.Restore(ctx, to, opts)
	if err != nil {
		return res, err
	}
	payload := RestoredEvent{To: to, Commit: res.Commit}
	if res.Safety != nil {
		payload.Safety = res.Safety.ID
	}
	if err := s.e.st.setLast(ctx, s.id, res.Commit, EventRestored, payload); err != nil {
		return res, err
	}
	s.mu.Lock()
	s.lastCheckpoint = string(res.Commit)
	s.mu.Unlock()
	return res, nil
}

// idleOp starts an operation that needs the session idle (a restore, a
// destroy): refused while a turn runs, and no turn starts until end is
// called. The check and the mark are one step under s.mu, as a turn's
// start is, so neither slips in while the other runs.
func (s *Session) idleOp(op string) (end func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn {
		return nil, errorf(grove.FailedPrecondition, op, "a turn is running")
	}
	s.idleOps++
	return func() {
		s.mu.Lock()
		s.idleOps--
		s.mu.Unlock()
	}, nil
}

// ForkOptions configure Session.Fork. Every zero field inherits the
// parent session's value, so that the fork resumes with the parent's
// configuration; the zero value (or nil) forks from a checkpoint of the
// head now, with everything inherited.
type ForkOptions struct {
	// Agent names the new session's agent; empty: the parent's.
	Agent string
	// Permission of the new session; empty: the parent's.
	Permission Permission
	// Snapshot is the new session's snapshot policy; nil: the parent's,
	// or, when Permission differs from the parent's, what NewSession
	// gives that permission (the engine's; Manual for ReadOnly).
	Snapshot *SnapshotPolicy
	// Config is the new session's configuration; nil: the parent's (a
	// non-nil empty slice means none).
	Config []byte
	// Extensions are built for the new session; nil: the parent's.
	Extensions []Extension
	// Policy is the new session's policy; nil: the parent's (a non-nil
	// empty slice means none).
	Policy []Policy
	// Roots are the new session's extra roots; nil: the parent's (a
	// non-nil empty slice means none).
	Roots []Root
	// From forks from this checkpoint (or revision) instead of from a
	// checkpoint of the head now.
	From grove.Rev
	// Checkpoint configures the checkpoint of the head when From is empty.
	Checkpoint workspace.CheckpointOptions
	// ByAgent marks a fork the session's agent asked for (the fork tool):
	// the workspace's Setup hook would run on files the agent wrote, so
	// where the session's workspace has no sandbox (Options.Sandbox,
	// ResumeOptions.Sandbox) such a fork of a workspace with a Setup hook
	// is PermissionDenied, and nothing is checkpointed or made.
	ByAgent bool
}

// Fork checkpoints the head (uncommitted work included; journaled as the
// parent's checkpoint), creates an isolated head called name from it and
// returns a new session bound to it exclusively, through its claim. The
// new head is never closed in between, so no other process can take it
// first; if the new session cannot start, the new head is destroyed again
// (its branch and the checkpoint stay). The parent's "forked" event is
// written in the same transaction as the new session. A ReadOnly session
// answers PermissionDenied (a fork checkpoints its source). opts may be
// nil.
func (s *Session) Fork(ctx context.Context, name string, opts *ForkOptions) (*Session, error) {
	const op = "fork"
	edone, err := s.e.begin(op)
	if err != nil {
		return nil, err
	}
	defer edone()
	ctx, done, err := s.enter(ctx, op, true, true)
	if err != nil {
		return nil, err
	}
	defer done()
	var o ForkOptions
	if opts != nil {
		o = *opts
	}
	sb := s.head.Workspace().Sandbox() // the session's workspace's, as it was opened or resumed
	if o.ByAgent && s.setup != nil && sb.Kind == grove.SandboxNone {
		return nil, errorf(grove.PermissionDenied, op, "the workspace's setup hook (%q) would run outside any sandbox on files the agent wrote: fork from the command line, or give the engine a sandbox", s.setup.Command)
	}
	if o.Agent == "" {
		o.Agent = s.agent
	}
	if o.Permission == "" {
		o.Permission = s.perm
	}
	if o.Snapshot == nil && o.Permission == s.perm {
		snap := s.snap
		o.Snapshot = &snap
	}
	if o.Config == nil {
		o.Config = s.config
	}
	if o.Extensions == nil {
		o.Extensions = s.exts
	}
	if o.Policy == nil {
		o.Policy = s.policy
	}
	if o.Roots == nil {
		o.Roots = s.roots
	}
	ws := s.head.Workspace()
	p, err := Placement{Exclusive: &ExistingHead{Backend: ws.Backend(), Root: ws.Info().Locator, Head: name, Setup: s.setup, Teardown: s.teardown, Remote: s.remote}}.validate()
	if err != nil {
		return nil, err
	}
	// The child gets a workspace handle of its own, so that it outlives
	// this session's.
	cws, err := workspace.Open(ctx, ws.Backend(), ws.Info().Locator, &workspace.OpenOptions{Setup: s.setup, Teardown: s.teardown, Remote: s.remote, Sandbox: &sb, Services: s.e.services, WatchChanges: s.e.watch})
	if err != nil {
		return nil, err
	}
	from := o.From
	if from == "" {
		if o.Checkpoint.Message == "" {
			o.Checkpoint.Message = "grove: checkpoint before fork to " + name
		}
		cp, err := s.head.Checkpoint(ctx, &o.Checkpoint)
		if err == nil {
			err = s.recordCheckpoint(ctx, cp, EventCheckpointed)
		}
		if err != nil {
			_ = cws.Close()
			return nil, err
		}
		from = grove.Rev(cp.ID)
	}
	// The child materialises what its parent does.
	b := cws.NewHead(name).From(from)
	if set := s.head.Info().Sparse; set != nil {
		b.Sparse(set...)
	}
	h, err := b.Create(ctx)
	if err != nil {
		_ = cws.Close()
		return nil, err
	}
	return s.e.start(ctx, sessionSpec{
		agent: o.Agent, placement: p, perm: o.Permission, snap: o.Snapshot,
		config: o.Config, exts: o.Extensions, head: h, ws: cws, parent: s.id,
		policy: o.Policy, roots: o.Roots,
	})
}

// Archive archives the session's head and journals it. A ReadOnly session
// answers PermissionDenied.
func (s *Session) Archive(ctx context.Context) error {
	ctx, done, err := s.enter(ctx, "archive", true, true)
	if err != nil {
		return err
	}
	defer done()
	if err := s.head.Archive(ctx); err != nil {
		return err
	}
	return s.e.st.journal(ctx, s.id, EventArchived, NoPayload{})
}

// Destroy destroys the session's head (with its final checkpoint unless
// opts.Discard), journals it and closes the session. It is an idle-time
// operation: while a turn runs it is FailedPrecondition. A ReadOnly
// session answers PermissionDenied.
func (s *Session) Destroy(ctx context.Context, opts *workspace.DestroyOptions) (workspace.DestroyResult, error) {
	cctx, done, err := s.enter(ctx, "destroy", true, true)
	if err != nil {
		return workspace.DestroyResult{}, err
	}
	end, err := s.idleOp("destroy")
	if err != nil {
		done()
		return workspace.DestroyResult{}, err
	}
	res, err := s.head.Destroy(cctx, opts)
	end()
	if err != nil {
		done()
		return res, err
	}
	var payload DestroyedEvent
	if res.Final != nil {
		payload.Final = res.Final.ID
	}
	jctx, cancel := detached(cctx)
	err = s.e.st.journal(jctx, s.id, EventDestroyed, payload)
	cancel()
	done()
	if cerr := s.Close(); err == nil && grove.CodeOf(cerr) != grove.FailedPrecondition {
		err = cerr // FailedPrecondition: a concurrent Close got there first
	}
	return res, err
}

// Turn runs one turn of the agent: it journals the start and the end,
// refuses Restore and Destroy meanwhile (and is refused while either
// runs: FailedPrecondition), and applies the snapshot policy: OnTurnDone
// checkpoints after the turn (a Required failure fails the turn; a
// BestEffort one is journaled), OnIdle checkpoints when no turn starts for
// the idle timeout. A second concurrent turn is FailedPrecondition.
//
// f's context ends when ctx does or when the session is closed. The end
// of the turn is journaled even when ctx was cancelled, and always before
// the session's "closed".
func (s *Session) Turn(ctx context.Context, f func(ctx context.Context) error) error {
	tctx, done, err := s.enter(ctx, "turn", false, false)
	if err != nil {
		return err
	}
	defer done()
	s.mu.Lock()
	if s.turn {
		s.mu.Unlock()
		return errorf(grove.FailedPrecondition, "turn", "a turn is already running")
	}
	if s.idleOps > 0 {
		s.mu.Unlock()
		return errorf(grove.FailedPrecondition, "turn", "a restore or destroy of the head is running")
	}
	s.turn = true
	s.turns++
	n := s.turns
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.idleGen++
	s.mu.Unlock()
	// The turn holds s.auto: an idle checkpoint that started before it
	// finishes first, and none starts until the turn has ended.
	s.auto.Lock()
	idle := false // arm the idle timer once the turn has ended
	defer func() {
		s.auto.Unlock()
		s.mu.Lock()
		s.turn = false
		if idle && !s.closed {
			s.idleGen++
			gen := s.idleGen
			s.idle = time.AfterFunc(s.snap.Idle, func() { s.idleCheckpoint(gen) })
		}
		s.mu.Unlock()
	}()
	if err := s.e.st.journal(tctx, s.id, EventTurnStarted, TurnStartedEvent{Turn: n}); err != nil {
		return err
	}
	ferr := f(tctx)
	doneMsg := TurnDoneEvent{Turn: n}
	if ferr != nil {
		doneMsg.Error = ferr.Error()
	}
	jctx, cancel := detached(tctx)
	s.journalTampering(jctx, false)
	err = s.e.st.journal(jctx, s.id, EventTurnDone, doneMsg)
	cancel()
	if err != nil {
		return errors.Join(ferr, err)
	}
	if s.head == nil || s.perm == ReadOnly {
		return ferr
	}
	switch s.snap.Trigger {
	case OnTurnDone:
		if err := s.autoCheckpoint(tctx, fmt.Sprintf("grove: after turn %d", n)); err != nil && s.snap.Mode == Required {
			return errors.Join(ferr, err)
		}
	case OnIdle:
		idle = true
	}
	return ferr
}

// autoCheckpoint takes a policy checkpoint, journaling a failure.
func (s *Session) autoCheckpoint(ctx context.Context, message string) error {
	cp, err := s.head.Checkpoint(ctx, &workspace.CheckpointOptions{Message: message})
	if err == nil {
		return s.recordCheckpoint(ctx, cp, EventCheckpointed)
	}
	if s.life.Err() != nil && grove.CodeOf(err) == grove.Canceled {
		return err // Close cancelled it: not a failure worth a journal entry
	}
	jctx, cancel := detached(ctx)
	defer cancel()
	_ = s.e.st.journal(jctx, s.id, EventCheckpointFailed, CheckpointFailedEvent{Error: err.Error(), Mode: s.snap.Mode})
	return err
}

// idleCheckpoint runs when idle timer gen fires. It does nothing when a
// turn runs or a newer timer replaced it; otherwise it holds s.auto, so a
// turn starting meanwhile waits for it. It is one of the session's calls
// in flight: Close cancels and waits for it.
func (s *Session) idleCheckpoint(gen int) {
	ctx, done, err := s.enter(context.Background(), "idle checkpoint", true, true)
	if err != nil {
		return // closed meanwhile
	}
	defer done()
	s.mu.Lock()
	if s.turn || gen != s.idleGen {
		s.mu.Unlock()
		return
	}
	s.idle = nil
	s.auto.Lock() // under s.mu: a turn cannot start between the check and this
	s.mu.Unlock()
	defer s.auto.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_ = s.autoCheckpoint(ctx, "grove: idle checkpoint")
}

// Drift lists the paths that differ between the head's files now and the
// session's last checkpoint: what a checkpoint now would record.
func (s *Session) Drift(ctx context.Context) ([]string, error) {
	ctx, done, err := s.enter(ctx, "drift", true, false)
	if err != nil {
		return nil, err
	}
	defer done()
	s.mu.Lock()
	last := s.lastCheckpoint
	s.mu.Unlock()
	if last == "" {
		last = string(s.head.Info().Base)
	}
	d, err := s.head.Diff(ctx, grove.Rev(last), grove.Live)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(d.Files))
	for i, f := range d.Files {
		out[i] = f.Path
	}
	return out, nil
}

// Events reads the session's journal back, in order.
func (s *Session) Events(ctx context.Context) ([]Event, error) { return s.e.Events(ctx, s.id) }

// As forwards to the head's backend; a headless or ReadOnly session
// answers false (a backend's own values can write).
func (s *Session) As(target any) bool {
	if s.head == nil || s.perm == ReadOnly {
		return false
	}
	return s.head.Workspace().Backend().As(target)
}

// Close ends the session in this process: it cancels and waits for what
// runs on the session's behalf (an idle checkpoint, a turn's context,
// calls in progress), journals the close, releases the session's claim
// and lease, and closes its head handle. It never deletes a head, a
// worktree or a branch. A second Close (or a Close after Detach) waits for
// the first to finish and is FailedPrecondition. Close must not be called
// from a turn's function or an extension's constructor, which it waits
// for.
func (s *Session) Close() error { return s.finish("close", false) }

// Detach ends the session in this process but leaves it open, for this
// process or another to Resume: like Close, it cancels and waits for what
// runs on the session's behalf and releases the session's lease and head
// handle; unlike Close, the session keeps its claim on its head (no other
// session gets it without a take-over) and its state stays "open". It
// journals "detached". This is how one process starts a session that
// another continues (a command-line tool, a worker handing over); a
// process that dies without Close leaves its session the same way, without
// the event. A second Detach (or a Detach after Close) is
// FailedPrecondition. Like Close, Detach must not be called from a turn's
// function or an extension's constructor.
func (s *Session) Detach() error { return s.finish("detach", true) }

// finish ends the session in this process: closing it or detaching it.
func (s *Session) finish(op string, detach bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closedCh
		return &grove.Error{Code: grove.FailedPrecondition, Op: "engine: " + op, Err: fmt.Errorf("session %s: %w", s.id, errAlreadyClosed)}
	}
	s.closed = true
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	s.end()
	s.wg.Wait()
	ctx, cancel := detached(context.Background())
	defer cancel()
	s.journalTampering(ctx, !detach) // a detached session's watch goes on
	var err error
	if detach {
		err = s.e.st.journal(ctx, s.id, EventDetached, NoPayload{})
	} else {
		err = s.e.st.closeSession(ctx, s.id)
	}
	s.release(ctx, false)
	s.e.untrack(s)
	close(s.closedCh)
	return err
}

// abandon ends a session whose extensions failed after it was persisted:
// a head the session made for itself (per-session, or a fork's) is
// destroyed again and journaled so, and the session is closed. Nothing is
// left that no caller knows of but a closed session's journal.
func (s *Session) abandon(ctx context.Context, created bool) {
	if created {
		ctx, cancel := detached(ctx)
		if _, err := s.head.Destroy(ctx, &workspace.DestroyOptions{Discard: true}); err == nil {
			_ = s.e.st.journal(ctx, s.id, EventDestroyed, DestroyedEvent{Reason: "the session failed to start"})
		}
		cancel()
	}
	_ = s.Close()
}

// Env is what an extension's constructor receives: the exact head and FS
// the session's file tools use.
type Env struct {
	SessionID string
	Head      *workspace.Head // the session's head under its permission; nil for a headless session
	FS        grove.FS        // the session's FS, permission enforced; nil for a headless session
	// Vars are the variables of the head's services (its ports, its
	// names: workspace.Head.Services), for an extension that starts
	// processes itself; nil without Options.Services or a head.
	Vars []string
}

// Extension adds a value to a session's environment, keyed by its dynamic
// type (a process runner, a tool set). New runs once the head is bound.
type Extension struct {
	New func(env Env) (any, error)
}

// buildExtensions builds s.exts for the session's environment. A
// constructor's error is returned as a *grove.Error of its code
// (Internal when it is not grove's).
func (s *Session) buildExtensions() error {
	s.built, s.builtOrder = map[reflect.Type]any{}, nil
	env := Env{SessionID: s.id, Head: s.view, FS: s.FS()}
	if s.view != nil && s.e.services != nil {
		hs, err := s.view.Services(context.Background())
		if err != nil {
			return err
		}
		env.Vars = hs.Env
	}
	for _, x := range s.exts {
		if x.New == nil {
			return errorf(grove.InvalidArgument, "extension", "an extension without a constructor")
		}
		v, err := x.New(env)
		if err != nil {
			return &grove.Error{Code: grove.CodeOf(err), Op: "engine: extension", Err: err}
		}
		t := reflect.TypeOf(v)
		if _, dup := s.built[t]; dup {
			return errorf(grove.InvalidArgument, "extension", "two extensions of type %v", t)
		}
		s.built[t] = v
		s.builtOrder = append(s.builtOrder, v)
	}
	return nil
}

// ExtensionOf returns the session's extension of type T: the one of that
// dynamic type, or, when T is an interface and none has it as its
// dynamic type, the first extension (in the order given) that implements
// T.
func ExtensionOf[T any](s *Session) (T, bool) {
	if v, ok := s.built[reflect.TypeFor[T]()].(T); ok {
		return v, true
	}
	if reflect.TypeFor[T]().Kind() == reflect.Interface {
		for _, x := range s.builtOrder {
			if v, ok := x.(T); ok {
				return v, true
			}
		}
	}
	var zero T
	return zero, false
}

// EventKind names a journal event. Each kind's payload is a JSON object
// with the fields its constant lists (omitted fields are absent), the JSON
// of its type (BoundEvent, CheckpointedEvent, ...: Event.Data); kinds are
// never renamed, and fields are only ever added.
type EventKind string

const (
	// EventBound: the session was made. {backend, workspace, head, access}
	// name its head (absent for a headless session).
	EventBound EventKind = "bound"
	// EventRelocated: Resume rebuilt the session's head on this host from
	// its last pushed checkpoint (ResumeOptions.Relocate): {head, dir (the
	// new directory), from (the directory the old binding recorded),
	// commit (the pushed commit the head was rebuilt from), behind (how
	// many journaled checkpoints it is behind the last; -1: not one the
	// journal records), stale (where a copy of the head this host held
	// before was moved aside; "" for none)}. The session's binding is the
	// new one from here on, and commit its last checkpoint.
	EventRelocated EventKind = "relocated"
	// EventRecreated: Resume rebuilt the session's head, whose directory
	// was gone (ResumeOptions.Recreate). {head: its ID, dir: its
	// directory, commit: the commit its files were rebuilt from}.
	EventRecreated EventKind = "recreated"
	// EventResumed: Resume reopened the session. {gained: the commits the
	// head gained since the last checkpoint, config_drift}.
	EventResumed EventKind = "resumed"
	// EventCheckpointed: a checkpoint (asked for, or by the snapshot
	// policy). {checkpoint: its commit, new: whether it made one,
	// skipped: how many paths it could not capture}.
	EventCheckpointed EventKind = "checkpointed"
	// EventCheckpointFailed: an automatic checkpoint failed. {error, mode}.
	EventCheckpointFailed EventKind = "checkpoint-failed"
	// EventRestored: the head was restored. {to: the revision asked for,
	// commit: the commit its tree now equals, safety: the safety
	// checkpoint, when one was taken}.
	EventRestored EventKind = "restored"
	// EventForked: a fork was made of the head. {session: the new
	// session, head: its head ID, from: the checkpoint it starts at}.
	EventForked EventKind = "forked"
	// EventArchived: the session archived its head. {}.
	EventArchived EventKind = "archived"
	// EventDestroyed: the head was destroyed. {final: the final
	// checkpoint, when one was taken; reason, when the engine destroyed a
	// head of its own making}.
	EventDestroyed EventKind = "destroyed"
	// EventTurnStarted: a turn began. {turn: its number, from 1}.
	EventTurnStarted EventKind = "turn-started"
	// EventTurnDone: a turn ended. {turn, error: why it failed, if it did}.
	EventTurnDone EventKind = "turn-done"
	// EventTampered: the head's watch saw something of the repository
	// change that the user's own git acts on (workspace.Head.Watch); the
	// payload lists the changes ({"changes": [{kind, name, was, now}]}).
	// grove doctor reports and reverts them.
	EventTampered EventKind = "tampered"
	// EventClosed: the session was closed; its claim is released. {}.
	EventClosed EventKind = "closed"
	// EventDetached: the session was left open for another process to
	// resume (Session.Detach). {}.
	EventDetached EventKind = "detached"
	// EventTakenOver: another session took this one's claim on its head.
	// {by: that session}.
	EventTakenOver EventKind = "taken-over"
)

// Event is one journal entry.
type Event struct {
	Seq     int64           // 1 for the session's first event, then one more each
	At      time.Time       // when it was journaled (UTC)
	Kind    EventKind       // what happened
	Payload json.RawMessage // a JSON object; its fields are the kind's (see Data)
	// Generation is the session's generation the event was written
	// under (see Session.Generation); it never decreases along a
	// journal. 0 for events written before generations were kept.
	Generation int64
}

// Events reads session id's journal, in order. An ID that names no session
// (or is not a session ID) is NotFound; a database that cannot be read is
// a *StoreError.
func (e *Engine) Events(ctx context.Context, id string) ([]Event, error) {
	if !validSessionID(id) {
		return nil, errorf(grove.NotFound, "events", "%q is not a session ID", id)
	}
	evs, err := e.st.events(ctx, id)
	if err == nil && len(evs) == 0 { // every session has at least "bound"
		err = errorf(grove.NotFound, "events", "no session %s", id)
	}
	return evs, err
}
