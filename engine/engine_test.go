package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groveworks/grove"
	"github.com/groveworks/grove/backend"
	"github.com/groveworks/grove/backend/backendutil"
	"github.com/groveworks/grove/engine"
	"github.com/groveworks/grove/gitbackend"
	"github.com/groveworks/grove/internal/githarness"
	"github.com/groveworks/grove/memorybackend"
	"github.com/groveworks/grove/workspace"
)

func files() fstest.MapFS {
	return fstest.MapFS{
		"README.md":  {Data: []byte("hello\n")},
		"src/app.go": {Data: []byte("package app\n")},
		".gitignore": {Data: []byte("node_modules/\n")},
	}
}

// memSetup is a memory workspace "demo" and a backend over it.
func memSetup(t *testing.T) (*memorybackend.Backend, engine.Placement) {
	t.Helper()
	store := memorybackend.NewStore()
	_, err := store.Init("demo", files())
	require.NoError(t, err)
	b := memorybackend.New(memorybackend.Options{Store: store})
	return b, engine.Placement{PerSession: &engine.PerSession{Backend: b, Root: "demo"}}
}

// failingCheckpoints passes every call through to a backend, except that
// its heads' checkpoints fail while fail is set, and their restores and
// destroys park where park says (when set): faults and timings no real
// backend can be made to have on demand.
type failingCheckpoints struct {
	backend.Backend
	fail *atomic.Bool
	park *backendutil.CallBlocker
}

func (b failingCheckpoints) OpenWorkspace(ctx context.Context, locator string, opts *backend.OpenOptions) (backend.Workspace, error) {
	ws, err := b.Backend.OpenWorkspace(ctx, locator, opts)
	if err != nil {
		return nil, err
	}
	return failingWorkspace{Workspace: ws, fail: b.fail, park: b.park}, nil
}

func (b failingCheckpoints) Reopen(ctx context.Context, bind grove.Binding, opts *backend.ReopenOptions) (backend.Workspace, backend.Head, error) {
	ws, h, err := b.Backend.Reopen(ctx, bind, opts)
	if err != nil {
		return nil, nil, err
	}
	return failingWorkspace{Workspace: ws, fail: b.fail, park: b.park}, failingHead{Head: h, fail: b.fail, park: b.park}, nil
}

type failingWorkspace struct {
	backend.Workspace
	fail *atomic.Bool
	park *backendutil.CallBlocker
}

func (w failingWorkspace) CreateHead(ctx context.Context, spec *backend.HeadSpec) (backend.Head, error) {
	h, err := w.Workspace.CreateHead(ctx, spec)
	if err != nil {
		return nil, err
	}
	return failingHead{Head: h, fail: w.fail, park: w.park}, nil
}

func (w failingWorkspace) OpenHead(ctx context.Context, name string, opts *backend.ReopenOptions) (backend.Head, error) {
	h, err := w.Workspace.OpenHead(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return failingHead{Head: h, fail: w.fail, park: w.park}, nil
}

type failingHead struct {
	backend.Head
	fail *atomic.Bool
	park *backendutil.CallBlocker
}

func (h failingHead) Restore(ctx context.Context, to grove.Rev) (backend.RestoreResult, error) {
	if h.park != nil {
		if err := h.park.Park(ctx, "restore"); err != nil {
			return backend.RestoreResult{}, grove.ContextError(ctx, "test: restore")
		}
	}
	return h.Head.Restore(ctx, to)
}

func (h failingHead) Checkpoint(ctx context.Context, opts *backend.CheckpointOptions) (grove.CheckpointResult, error) {
	if h.fail.Load() {
		return grove.CheckpointResult{}, grove.Errorf(grove.Internal, "test", "checkpoint fails")
	}
	return h.Head.Checkpoint(ctx, opts)
}

func openEngine(t *testing.T, opts engine.Options) *engine.Engine {
	t.Helper()
	if opts.Path == "" {
		opts.Path = filepath.Join(t.TempDir(), "grove.db")
	}
	e, err := engine.Open(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// gitRepo makes a git repository with files() on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, githarness.InitRepo(context.Background(), repo, files()))
	return repo
}

func kinds(t *testing.T, s *engine.Session) []engine.EventKind {
	t.Helper()
	evs, err := s.Events(context.Background())
	require.NoError(t, err)
	return eventKinds(evs)
}

// eventKinds lists the kinds of evs, in order.
func eventKinds(evs []engine.Event) []engine.EventKind {
	var out []engine.EventKind
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

func TestNewSessionPersistsBindingAndJournalsEachStep(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	path := filepath.Join(t.TempDir(), "grove.db")
	e := openEngine(t, engine.Options{Path: path, Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Agent: "coder", Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}})
	require.NoError(t, err)
	h := s.Head()
	assert.Equal(t, "session-"+s.ID(), h.Info().Name)
	assert.Equal(t, grove.Isolated, h.Info().Access)

	require.NoError(t, s.FS().WriteFile("a.txt", []byte("a\n"), 0o644))
	cp, err := s.Checkpoint(ctx, nil)
	require.NoError(t, err)
	_, err = s.Restore(ctx, grove.Rev(h.Info().Base), nil)
	require.NoError(t, err)
	require.NoError(t, s.Turn(ctx, func(context.Context) error { return nil }))
	child, err := s.Fork(ctx, "experiment", nil)
	require.NoError(t, err)
	require.NoError(t, child.Close())
	require.NoError(t, s.Close())
	assert.Equal(t, []engine.EventKind{
		engine.EventBound, engine.EventCheckpointed, engine.EventRestored,
		engine.EventTurnStarted, engine.EventTurnDone, engine.EventCheckpointed, engine.EventForked, engine.EventClosed,
	}, kinds(t, s))
	// Each payload reads back as its kind's type.
	evs, err := e.Events(ctx, s.ID())
	require.NoError(t, err)
	var data []any
	for _, ev := range evs {
		d, err := ev.Data()
		require.NoError(t, err, "%s", ev.Kind)
		data = append(data, d)
	}
	bound := data[0].(engine.BoundEvent)
	assert.Equal(t, engine.BoundEvent{Backend: b.ID(), Workspace: bound.Workspace, Head: h.Info().ID, Access: grove.Isolated}, bound)
	assert.NotEmpty(t, bound.Workspace)
	assert.Equal(t, engine.CheckpointedEvent{Checkpoint: cp.ID, New: true}, data[1])
	assert.Equal(t, engine.RestoredEvent{To: grove.Rev(h.Info().Base), Commit: h.Info().Base}, data[2].(engine.RestoredEvent))
	assert.Equal(t, engine.TurnStartedEvent{Turn: 1}, data[3])
	assert.Equal(t, engine.TurnDoneEvent{Turn: 1}, data[4])
	assert.Equal(t, child.ID(), data[6].(engine.ForkedEvent).Session)
	assert.Equal(t, engine.NoPayload{}, data[7])
	raw, err := engine.Event{Kind: "from-a-newer-engine", Payload: []byte(`{"x":1}`)}.Data()
	require.NoError(t, err)
	assert.JSONEq(t, `{"x":1}`, string(raw.(json.RawMessage)), "a kind this engine does not know stays raw")
	_, err = engine.Event{Kind: engine.EventTurnDone, Payload: []byte(`{"turn":"one"}`)}.Data()
	assert.Error(t, err, "a payload that does not decode")

	// A second process (another engine on the same file) resumes it.
	e2 := openEngine(t, engine.Options{Path: path, Backends: []workspace.Backend{b}, Placement: p})
	r, err := e2.Resume(ctx, s.ID(), &engine.ResumeOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.Manual}})
	require.NoError(t, err)
	defer r.Close()
	assert.Equal(t, h.Info().ID, r.Head().Info().ID)
	assert.NotEqual(t, cp.ID, r.Resumed().LastCheckpoint, "the restore is the last journaled state")
	assert.Equal(t, h.Info().Base, r.Resumed().LastCheckpoint)
}

func TestRegistryRefusesTwoBackendsWithOneID(t *testing.T) {
	b1, _ := memSetup(t)
	b2, _ := memSetup(t)
	_, err := engine.Open(context.Background(), engine.Options{Path: filepath.Join(t.TempDir(), "g.db"), Backends: []workspace.Backend{b1, b2}})
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "error: %v", err)
}

func TestPlacementErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	gb := gitbackend.New(gitbackend.Options{})
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b, gb}})
	cases := []struct {
		kind engine.PlacementKind
		opts engine.SessionOptions
	}{
		{engine.NoPlacement, engine.SessionOptions{}},
		{engine.TwoPlacements, engine.SessionOptions{Placement: engine.Placement{PerSession: p.PerSession, Shared: &engine.ExistingHead{Backend: b, Root: "demo", Head: "x"}}}},
		{engine.TwoPlacements, engine.SessionOptions{Headless: true, Placement: p}},
		{engine.NilBackend, engine.SessionOptions{Placement: engine.Placement{PerSession: &engine.PerSession{Root: "demo"}}}},
		{engine.EmptyRoot, engine.SessionOptions{Placement: engine.Placement{PerSession: &engine.PerSession{Backend: b}}}},
		{engine.BadRoot, engine.SessionOptions{Placement: engine.Placement{PerSession: &engine.PerSession{Backend: gb, Root: filepath.Join(t.TempDir(), "absent")}}}},
		{engine.NoHeadName, engine.SessionOptions{Placement: engine.Placement{Exclusive: &engine.ExistingHead{Backend: b, Root: "demo"}}}},
	}
	for _, c := range cases {
		_, err := e.NewSession(ctx, &c.opts)
		var pe *engine.PlacementError
		if assert.True(t, errors.As(err, &pe), "%s: error %v is not a *PlacementError", c.kind, err) {
			assert.Equal(t, c.kind, pe.Kind)
		}
		assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "%s: %v", c.kind, err)
	}
	// At engine definition too.
	_, err := engine.Open(ctx, engine.Options{Path: filepath.Join(t.TempDir(), "g.db"),
		Placement: engine.Placement{PerSession: &engine.PerSession{Backend: b}}})
	var pe *engine.PlacementError
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, engine.EmptyRoot, pe.Kind)
	assert.ErrorIs(t, err, grove.ErrInvalidArgument)
}

func TestSnapshotPolicyRequiredOnASharedHeadIsRefused(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	h, err := ws.NewHead("common").Shared().Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	_, err = e.NewSession(ctx, &engine.SessionOptions{
		Placement: engine.Placement{Shared: &engine.ExistingHead{Backend: b, Root: "demo", Head: "common"}},
		Snapshot:  &engine.SnapshotPolicy{Trigger: engine.OnTurnDone, Mode: engine.Required},
	})
	var se *engine.SnapshotPolicyError
	assert.True(t, errors.As(err, &se), "error: %v", err)
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "error: %v", err)
	_, err = engine.Open(ctx, engine.Options{Path: filepath.Join(t.TempDir(), "g.db"),
		Placement: engine.Placement{Shared: &engine.ExistingHead{Backend: b, Root: "demo", Head: "common"}},
		Snapshot:  engine.SnapshotPolicy{Mode: engine.Required}})
	assert.True(t, errors.As(err, &se), "error: %v", err)
	assert.ErrorIs(t, err, grove.ErrInvalidArgument)

	// A shared head takes many sessions.
	var ss []*engine.Session
	for range 3 {
		s, err := e.NewSession(ctx, &engine.SessionOptions{Placement: engine.Placement{Shared: &engine.ExistingHead{Backend: b, Root: "demo", Head: "common"}}})
		require.NoError(t, err)
		ss = append(ss, s)
	}
	for _, s := range ss {
		require.NoError(t, s.Close())
	}
}

func TestPersistenceInsideAHeadIsRefused(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	gb := gitbackend.New(gitbackend.Options{})
	ws, err := workspace.Open(ctx, gb, repo, nil)
	require.NoError(t, err)
	defer ws.Close()
	h, err := ws.NewHead("target").Shared().Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	e := openEngine(t, engine.Options{Path: filepath.Join(h.Info().Root, "grove.db"), Backends: []workspace.Backend{gb}})
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: engine.Placement{Shared: &engine.ExistingHead{Backend: gb, Root: repo, Head: "target"}}})
	var oe *engine.PersistenceOverlapError
	assert.True(t, errors.As(err, &oe), "error: %v", err)
	assert.Equal(t, grove.InvalidArgument, grove.CodeOf(err), "error: %v", err)
}

func TestHeadlessSessionAnswersWorkspaceNotConfiguredAndJournalsNothing(t *testing.T) {
	ctx := context.Background()
	e := openEngine(t, engine.Options{})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Headless: true})
	require.NoError(t, err)
	defer s.Close()
	before := kinds(t, s)
	_, err = s.Checkpoint(ctx, nil)
	assert.Equal(t, grove.WorkspaceNotConfigured, grove.CodeOf(err))
	_, err = s.Restore(ctx, "main", nil)
	assert.Equal(t, grove.WorkspaceNotConfigured, grove.CodeOf(err))
	assert.Equal(t, before, kinds(t, s))
	assert.Nil(t, s.Head())
}

func TestRestoreIsRefusedWhileATurnRuns(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p, Snapshot: engine.SnapshotPolicy{Trigger: engine.Manual}})
	s, err := e.NewSession(ctx, &engine.SessionOptions{})
	require.NoError(t, err)
	defer s.Close()
	err = s.Turn(ctx, func(ctx context.Context) error {
		_, err := s.Restore(ctx, grove.Rev(s.Head().Info().Base), nil)
		assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "restore during a turn: %v", err)
		return nil
	})
	require.NoError(t, err)
}

// A turn does not start while a restore of the head runs: the exclusion
// is one state, held for the whole restore, both ways.
func TestATurnIsRefusedWhileARestoreRuns(t *testing.T) {
	ctx := context.Background()
	mem, _ := memSetup(t)
	park := &backendutil.CallBlocker{}
	b := failingCheckpoints{Backend: mem, fail: &atomic.Bool{}, park: park}
	p := engine.Placement{PerSession: &engine.PerSession{Backend: b, Root: "demo"}}
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p, Snapshot: engine.SnapshotPolicy{Trigger: engine.Manual}})
	s, err := e.NewSession(ctx, &engine.SessionOptions{})
	require.NoError(t, err)
	defer s.Close()
	parked := park.BlockNextCall("restore")
	rctx, cancel := context.WithCancel(ctx)
	restored := make(chan error, 1)
	go func() {
		_, err := s.Restore(rctx, grove.Rev(s.Head().Info().Base), &workspace.RestoreOptions{Discard: true})
		restored <- err
	}()
	<-parked
	ran := false
	err = s.Turn(ctx, func(context.Context) error { ran = true; return nil })
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "a turn during a restore: %v", err)
	assert.False(t, ran, "the turn's function ran while the head was being restored")
	cancel()
	assert.Equal(t, grove.Canceled, grove.CodeOf(<-restored))
	require.NoError(t, s.Turn(ctx, func(context.Context) error { ran = true; return nil }))
	assert.True(t, ran, "a turn after the restore runs")
}

func TestSnapshotPolicies(t *testing.T) {
	ctx := context.Background()
	var fail atomic.Bool
	mem, _ := memSetup(t)
	b := failingCheckpoints{Backend: mem, fail: &fail}
	p := engine.Placement{PerSession: &engine.PerSession{Backend: b, Root: "demo"}}
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	write := func(s *engine.Session) func(context.Context) error {
		return func(context.Context) error { return s.FS().WriteFile("turn.txt", []byte(time.Now().String()), 0o644) }
	}

	s, err := e.NewSession(ctx, &engine.SessionOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnTurnDone}})
	require.NoError(t, err)
	require.NoError(t, s.Turn(ctx, write(s)))
	assert.Contains(t, kinds(t, s), engine.EventCheckpointed)
	fail.Store(true)
	require.NoError(t, s.Turn(ctx, write(s)), "a best-effort checkpoint failure failed the turn")
	assert.Contains(t, kinds(t, s), engine.EventCheckpointFailed)
	require.NoError(t, s.Close())

	s, err = e.NewSession(ctx, &engine.SessionOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnTurnDone, Mode: engine.Required}})
	require.NoError(t, err)
	assert.Error(t, s.Turn(ctx, write(s)), "a required checkpoint failure must fail the turn")
	require.NoError(t, s.Close())
	fail.Store(false)

	s, err = e.NewSession(ctx, &engine.SessionOptions{Snapshot: &engine.SnapshotPolicy{Trigger: engine.OnIdle, Idle: 20 * time.Millisecond}})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Turn(ctx, write(s)))
	require.Eventually(t, func() bool {
		for _, k := range kinds(t, s) {
			if k == engine.EventCheckpointed {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no idle checkpoint was taken")
}

func TestReadOnlySessionRefusesWrites(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Permission: engine.ReadOnly})
	require.NoError(t, err)
	defer s.Close()
	data, err := s.FS().ReadFile("README.md")
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))
	for _, err := range []error{
		s.FS().WriteFile("x", nil, 0o644),
		s.FS().WriteFileIf("x", nil, 0o644, grove.Digest{}),
		s.FS().Remove("README.md"),
		s.FS().MkdirAll("d", 0o755),
		s.FS().Rename("README.md", "y"),
		s.FS().Chmod("README.md", 0o600),
		s.FS().Symlink("README.md", "l"),
	} {
		assert.Equal(t, grove.PermissionDenied, grove.CodeOf(err), "error: %v", err)
	}
}

type runner struct{ env engine.Env }

func TestExtensionsReceiveTheSessionsHeadAndAsForwards(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	s, err := e.NewSession(ctx, &engine.SessionOptions{Extensions: []engine.Extension{
		{New: func(env engine.Env) (any, error) { return &runner{env: env}, nil }},
	}})
	require.NoError(t, err)
	defer s.Close()
	r, ok := engine.ExtensionOf[*runner](s)
	require.True(t, ok)
	assert.Same(t, s.Head(), r.env.Head, "the extension got another head than the file tools")
	assert.Equal(t, s.ID(), r.env.SessionID)
	var store *memorybackend.Store
	assert.True(t, s.As(&store))
	assert.Same(t, b.Store(), store)
	store = nil
	assert.True(t, e.As(&store))
	assert.Same(t, b.Store(), store)
}

func TestExclusiveHeadTakesOneSessionAtATime(t *testing.T) {
	ctx := context.Background()
	b, p := memSetup(t)
	ws, err := workspace.Open(ctx, b, "demo", nil)
	require.NoError(t, err)
	h, err := ws.NewHead("solo").Shared().Create(ctx)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	e := openEngine(t, engine.Options{Backends: []workspace.Backend{b}, Placement: p})
	ex := engine.Placement{Exclusive: &engine.ExistingHead{Backend: b, Root: "demo", Head: "solo"}}
	s1, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex, Wait: time.Hour})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "a claim is not waited for: %v", err)
	var claimed *engine.ClaimedError
	if assert.ErrorAs(t, err, &claimed) {
		assert.Equal(t, s1.ID(), claimed.Holder.ID, "the error names the claiming session")
		assert.True(t, claimed.Holder.Live)
	}
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex, TakeOver: true})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "a take-over of a live session's claim: %v", err)
	require.NoError(t, s1.Close())

	s2, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	require.NoError(t, err)
	require.NoError(t, s2.Close())

	// A holder of an isolated head that is no session (another command's
	// open head) is waited for, with Wait.
	held, err := ws.NewHead("iso").Create(ctx)
	require.NoError(t, err)
	ex = engine.Placement{Exclusive: &engine.ExistingHead{Backend: b, Root: "demo", Head: "iso"}}
	_, err = e.NewSession(ctx, &engine.SessionOptions{Placement: ex})
	assert.Equal(t, grove.AlreadyBound, grove.CodeOf(err), "no wait: %v", err)
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(100 * time.Millisecond)
		assert.NoError(t, held.Close())
	}()
	s3, err := e.NewSession(ctx, &engine.SessionOptions{Placement: ex, Wait: time.Minute})
	<-released
	require.NoError(t, err)
	require.NoError(t, s3.Close())
}

func TestResumeOfUnknownOrMalformedIDs(t *testing.T) {
	ctx := context.Background()
	e := openEngine(t, engine.Options{})
	for _, id := range []string{"00000000-0000-4000-8000-000000000000", "not-a-uuid", "", "00000000000040008000000000000000"} {
		_, err := e.Resume(ctx, id, nil)
		var re *engine.ResumeError
		if assert.True(t, errors.As(err, &re), "%q: %v", id, err) {
			assert.Equal(t, engine.SessionNotFound, re.Kind)
		}
		assert.Equal(t, grove.NotFound, grove.CodeOf(err), "%q: %v", id, err)
		assert.ErrorIs(t, err, grove.ErrNotFound, "%q", id)
		assert.NotErrorIs(t, err, grove.ErrInvalidArgument, "%q: one error, two codes", id)
	}
}

func TestADatabaseThatIsNotSQLiteIsRefusedUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	content := []byte("these are my notes, not a database\n")
	require.NoError(t, os.WriteFile(path, content, 0o644))
	_, err := engine.Open(context.Background(), engine.Options{Path: path})
	var se *engine.StoreError
	require.True(t, errors.As(err, &se), "error: %v", err)
	assert.Equal(t, engine.NotADatabase, se.Kind)
	assert.Equal(t, grove.FailedPrecondition, grove.CodeOf(err), "error: %v", err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, content, got)
}

// A database file emptied since it was made (truncated by a full disk, an
// agent, a tool) is no new, empty store whose sessions all resume as not
// found: it is StoreCorrupt, and stays as it is.
func TestAnEmptyDatabaseFileIsCorruptNotNew(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grove.db")
	e, err := engine.Open(ctx, engine.Options{Path: path})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.NoError(t, os.Truncate(path, 0))
	_, err = engine.Open(ctx, engine.Options{Path: path})
	var se *engine.StoreError
	require.True(t, errors.As(err, &se), "error: %v", err)
	assert.Equal(t, engine.StoreCorrupt, se.Kind)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, fi.Size(), "the file was written")
}

// Processes opening one new database together all get it, whole: none
// finds it half-made.
func TestANewDatabaseIsMadeWholeWhoeverOpensItFirst(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grove.db")
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			e, err := engine.Open(ctx, engine.Options{Path: path})
			if err == nil {
				err = e.Close()
			}
			errs <- err
		}()
	}
	for range 8 {
		require.NoError(t, <-errs)
	}
	leftovers, err := filepath.Glob(path + ".new-*")
	require.NoError(t, err)
	assert.Empty(t, leftovers)
}

func TestADatabaseFromANewerSchemaIsRefusedUntouched(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "grove.db")
	e, err := engine.Open(ctx, engine.Options{Path: path})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	setUserVersion(t, path, engine.SchemaVersion+1)
	before := snapshotDir(t, filepath.Dir(path))
	_, err = engine.Open(ctx, engine.Options{Path: path})
	var se *engine.StoreError
	require.True(t, errors.As(err, &se), "error: %v", err)
	assert.Equal(t, engine.SchemaTooNew, se.Kind)
	assert.ErrorIs(t, err, grove.ErrFailedPrecondition)
	after := snapshotDir(t, filepath.Dir(path))
	for name := range before {
		assert.Equal(t, before[name] == after[name], true, "%s changed", name)
	}
	for name := range after {
		_, had := before[name]
		assert.True(t, had, "%s appeared", name)
	}
}

// A column of a session's row that does not read as what the engine
// wrote — a damaged snapshot policy, placement, policy, roots or time —
// is StoreCorrupt, never its zero value: a shared session whose placement
// is damaged must not resume as an exclusive one, taking a claim.
func TestADamagedSessionColumnIsCorruptNotZero(t *testing.T) {
	for column, value := range map[string]string{
		"snapshot":   `{"trigger":`,
		"placement":  `{"kind":"shared"`,
		"policy":     `[{"ReadOnly":"yes"}]`,
		"roots":      `not json`,
		"created_at": `yesterday`,
		"updated_at": `2026-13-45`,
	} {
		t.Run(column, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "grove.db")
			e, err := engine.Open(ctx, engine.Options{Path: path})
			require.NoError(t, err)
			s, err := e.NewSession(ctx, &engine.SessionOptions{Headless: true})
			require.NoError(t, err)
			id := s.ID()
			require.NoError(t, s.Close())
			require.NoError(t, e.Close())

			db, err := sql.Open("sqlite3", path)
			require.NoError(t, err)
			_, err = db.Exec("UPDATE sessions SET "+column+" = ? WHERE id = ?", value, id)
			require.NoError(t, err)
			require.NoError(t, db.Close())

			e, err = engine.Open(ctx, engine.Options{Path: path})
			require.NoError(t, err)
			defer e.Close()
			var se *engine.StoreError
			_, err = e.Sessions(ctx)
			require.True(t, errors.As(err, &se), "Sessions: %v", err)
			assert.Equal(t, engine.StoreCorrupt, se.Kind)
			if column == "created_at" || column == "updated_at" {
				return // Resume reads neither
			}
			_, err = e.Resume(ctx, id, &engine.ResumeOptions{AsRecorded: true})
			require.True(t, errors.As(err, &se), "Resume: %v", err)
			assert.Equal(t, engine.StoreCorrupt, se.Kind)
		})
	}
}
